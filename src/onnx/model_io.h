// Reading and writing ONNX model files.
//
// LoadModel parses a model file (any size protobuf allows) and pulls every tensor stored in
// external data files into memory, so the rest of ptqkit sees self-contained tensors. The input
// files are only ever opened for reading.
//
// SaveModel writes atomically: the model (and its external data file, if any) go to temporary
// files in the destination folder and are renamed into place only when complete, so a failure
// never leaves a half-written output behind.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "base/atomic_file.h"

namespace ptqkit::onnxio {

// Throws ptqkit::Error naming the path for: missing file, unreadable file, bytes that are not an
// ONNX model, missing or unreadable external data, external data outside the model's folder
// (symlinks resolved) or with offsets/lengths that are not byte counts inside the file. A pipe or
// device is refused without being read. `external_files`, when given, receives the resolved paths
// of the external data files read (so a caller can keep its outputs off them).
onnx::ModelProto LoadModel(const std::string& path, std::vector<std::string>* external_files = nullptr);

struct SaveOptions {
  // Store initializers larger than `external_threshold_bytes` in "<output file name>.data".
  // Forced on automatically when the serialized model would exceed protobuf's 2 GiB limit.
  bool external_data = false;
  size_t external_threshold_bytes = 1024;
};

// REQUIRES: path's folder exists and is writable. Throws ptqkit::Error (kIo) otherwise.
void SaveModel(const onnx::ModelProto& model, const std::string& path, const SaveOptions& options = {});

// SaveModel in two steps: Stage() writes the model (and its external data) to temporary files in
// the destination folder, Commit() renames them into place. Between the two the caller may reuse
// the ModelProto's memory (quantize evaluates the saved model in place) and still abandon the
// output: a writer destroyed without Commit() removes its temporary files.
class ModelFileWriter {
 public:
  // Throws ptqkit::Error (kIo) as SaveModel does; nothing is left behind on error.
  void Stage(const onnx::ModelProto& model, const std::string& path, const SaveOptions& options = {});
  // The data file first: a model file that exists always has its data beside it.
  void Commit();

 private:
  AtomicFileWriter data_;
  AtomicFileWriter model_;
};

}  // namespace ptqkit::onnxio
