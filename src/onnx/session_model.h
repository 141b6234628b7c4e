// SessionModel: a model as ONNX Runtime is handed it. The serialized graph carries no large
// weights: protobuf cannot serialize more than 2 GiB, and serializing the weights would hold them
// twice more (the bytes, then ONNX Runtime's parse). The large top-level initializers are instead
// views into the caller's ModelProto (runtime/session.h hands them over): as graph inputs when they
// total more than kWeightsAsInputsAbove, which ONNX Runtime reads in place, so a model over 2 GiB
// runs with its weights once in memory; below that as external initializers, which it copies.
// REQUIRES: the ModelProto outlives every session made from its SessionModel and is not edited
// while they exist.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ptqkit::onnxio {

struct WeightView {
  std::string name;
  int32_t data_type = 0;  // onnx::TensorProto::DataType
  std::vector<int64_t> dims;
  const char* data = nullptr;
  size_t size = 0;  // bytes
};

// A copy of `model` without its top-level initializers (nothing of them is copied).
onnx::ModelProto CopyWithoutInitializers(const onnx::ModelProto& model);

// A copy of `model` in which every top-level initializer above `min_bytes` of raw data is
// replaced by `placeholder(original)`: the large weights are never copied.
onnx::ModelProto CopyWithoutLargeWeights(const onnx::ModelProto& model, size_t min_bytes,
                                         const std::function<onnx::TensorProto(const onnx::TensorProto&)>& placeholder);

// Above this many bytes of large weights, a session model declares them as graph inputs (fed from
// the views) instead of initializers (which ONNX Runtime copies): see MakeSessionModel.
constexpr size_t kWeightsAsInputsAbove = size_t{256} << 20;
// Initializers above this many bytes become views (the rest stay in the serialized graph).
constexpr size_t kDefaultViewBytes = 64 * 1024;

// Whether MakeSessionModel(model) (default min_bytes) hands ONNX Runtime the large weights as inputs.
bool WeightsGoAsInputs(const onnx::ModelProto& model);

struct SessionModel {
  std::string graph_bytes;
  std::vector<WeightView> weights;
  bool weights_as_inputs = false;  // else: initializers of the graph, handed over by address
};

// The placeholder a light copy holds instead of `tensor`: name, type and dims, marked as external
// data at the stash location (onnx/weight_stash.h), no bytes.
onnx::TensorProto WeightPlaceholder(const onnx::TensorProto& tensor);

// `outputs` replaces the graph outputs (declared by name only; ONNX Runtime infers their types);
// empty keeps the model's own. Initializers above `min_bytes` of raw data become views. `edit`,
// when given, then edits the light copy (it sees the placeholders, never the large weights).
SessionModel MakeSessionModel(const onnx::ModelProto& model, const std::vector<std::string>& outputs = {},
                              size_t min_bytes = kDefaultViewBytes,
                              const std::function<void(onnx::ModelProto*)>& edit = nullptr);

// A session model of `light`, a model whose large initializers are already WeightPlaceholders (a
// probe built from a model's graph without copying its weights): each placeholder becomes a view
// of the initializer of the same name in `weights`. Throws ptqkit::Error when one has none.
// `all_as_inputs`: the light model's own initializers above kDefaultViewBytes become views too,
// and every view is a graph input whatever their total. A candidate scored in place of a model
// whose weights go as inputs then runs the same kernels (no weight is constant or pre-packed), and
// ONNX Runtime does not fold a DequantizeLinear of constant codes into a float copy of the weight.
// REQUIRES: `weights` (and, with all_as_inputs, `light`) outlive every session made from the
// result and are not edited meanwhile.
SessionModel MakeSessionModelOver(const onnx::ModelProto& light, const onnx::GraphProto& weights,
                                  bool all_as_inputs = false);

}  // namespace ptqkit::onnxio
