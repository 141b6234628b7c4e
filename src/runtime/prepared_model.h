// Steps shared by `quantize` and `sensitivity` before any stage-specific work:
//  - LoadPreparedModel: load, refuse what ptqkit does not handle, name every node, upgrade the
//    opset to at least 13;
//  - OpenCalibrationData: the user's data (path or tensors) or seeded synthetic data, validated
//    against the model's inputs, plus the batching that follows from the options.
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/io_guard.h"
#include "ptqkit/calibration.h"
#include "ptqkit/quantize.h"
#include "runtime/session.h"

namespace ptqkit {

struct PreparedModel {
  onnx::ModelProto proto;
  int64_t original_opset = 0;
  std::vector<InputSpec> inputs;
  std::vector<std::string> external_files;  // resolved paths of the external data files read
};

// With `guard`, the model's external data files join its inputs and the guard is checked once
// they are known, before any work is done.
PreparedModel LoadPreparedModel(const std::string& path, IoGuard guard = {});

// --output_path, or its default <input folder>/<stem>.quant.onnx (as Quantize() computes it).
std::string QuantizeOutputPath(const QuantizeOptions& options);

// The files a quantize run reads and writes (model, data, cache; output, <output>.data, cache).
IoGuard QuantizeFiles(const QuantizeOptions& options, const std::string& output_path);

struct DataRequest {
  std::string path;
  const std::map<std::string, HostTensor>* tensors = nullptr;
  int64_t synthetic_samples = 32;
  uint64_t synthetic_seed = 0;
  std::map<std::string, std::vector<int64_t>> shapes;  // --calibration_shapes
  int64_t batch_size = 0;                               // --calibration_batch_size
  std::map<std::string, int64_t> batch_axes;           // --calibration_batch_axis
};

struct CalibrationData {
  CalibrationSet set;
  bool synthetic = false;
  int64_t batch_size = 1;
  int64_t num_batches = 0;  // batches to use (a fixed model batch may leave a remainder out)
  bool fixed_batch = false;  // the model's batch size is fixed: only whole batches can run
  std::map<std::string, int64_t> sample_axes;  // model input -> axis its samples lie along; -1 = fixed
};

// The data and runtime parts of the quantize options (shared by the INT8/FP8 and INT4 pipelines).
DataRequest CalibrationRequest(const QuantizeOptions& options);
RuntimeOptions Runtime(const QuantizeOptions& options);

// Throws ptqkit::Error for data that does not fit the model.
CalibrationData OpenCalibrationData(const PreparedModel& model, const DataRequest& request);

}  // namespace ptqkit
