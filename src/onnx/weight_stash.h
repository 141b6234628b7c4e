// WeightStash: moves the bytes of large top-level initializers out of a model for the time the
// model is copied, converted, inferred, checked or serialized, and puts them back afterwards.
// A 2 GiB model would otherwise be held two or three times over (the ONNX library's converter
// and shape inference copy the whole model; serialization copies it again). While stashed, each
// tensor keeps its name, type and dims and is marked as external data at a placeholder location,
// so the library's checker and ONNX Runtime (which receives the bytes separately, see
// runtime/session.h) accept it.
// Not thread-safe; the stash must not outlive the model. Restore() (or the destructor) must run
// before anything reads initializer values.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <string>

namespace ptqkit::onnxio {

// The external-data location a stashed initializer points at while its bytes are out.
inline constexpr const char* kStashedLocation = "ptqkit-stashed-weights";

// Marks `tensor` as external data: `length` bytes at `offset` of the file `location`. Used for the
// stash placeholder, the session models' placeholders and the references SaveModel writes.
void MarkExternal(onnx::TensorProto* tensor, const std::string& location, uint64_t offset, uint64_t length);

class WeightStash {
 public:
  // Stashes every top-level initializer with more than `min_bytes` of raw data.
  explicit WeightStash(onnx::ModelProto* model, size_t min_bytes = 64 * 1024);
  ~WeightStash();
  WeightStash(const WeightStash&) = delete;
  WeightStash& operator=(const WeightStash&) = delete;

  // Puts the bytes back into `model` (the one given to the constructor, or a converted copy of
  // it): initializers are matched by name; a stashed name no longer present is an error.
  void RestoreInto(onnx::ModelProto* model);

 private:
  onnx::ModelProto* model_;
  std::map<std::string, std::string> bytes_;
  bool restored_ = false;
};

// True when `tensor` is a placeholder left by a WeightStash.
bool IsStashed(const onnx::TensorProto& tensor);

}  // namespace ptqkit::onnxio
