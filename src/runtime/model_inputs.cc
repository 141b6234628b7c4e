#include "runtime/model_inputs.h"

#include <fmt/format.h>

#include <set>

#include "ptqkit/error.h"

namespace ptqkit {

std::vector<InputSpec> ModelInputSpecs(const onnx::GraphProto& graph) {
  std::set<std::string> initializers;
  for (const auto& t : graph.initializer()) initializers.insert(t.name());
  std::vector<InputSpec> specs;
  for (const auto& v : graph.input()) {
    if (initializers.count(v.name())) continue;
    InputSpec spec;
    spec.name = v.name();
    // ptqkit feeds tensors only: an input declared without a type, or as a sequence, map or
    // optional, cannot be given calibration data (it is not a scalar, as an empty shape would say).
    if (!v.has_type() || v.type().value_case() == onnx::TypeProto::VALUE_NOT_SET) {
      throw Error(fmt::format("model input '{}' has no type; ptqkit needs a tensor type (element type and shape) for "
                              "every graph input",
                              v.name()));
    }
    if (!v.type().has_tensor_type()) {
      const char* kind = v.type().has_sequence_type()   ? "a sequence"
                         : v.type().has_map_type()      ? "a map"
                         : v.type().has_optional_type() ? "an optional"
                                                        : "not a dense tensor";
      throw Error(fmt::format("model input '{}' is {}; ptqkit calibrates models whose inputs are tensors", v.name(),
                              kind),
                  Error::Kind::kUnsupported);
    }
    const auto& tt = v.type().tensor_type();
    if (tt.elem_type() == 0) {
      throw Error(fmt::format("model input '{}' is a tensor with no element type; the model must declare it", v.name()));
    }
    spec.dtype = static_cast<DataType>(tt.elem_type());
    for (const auto& d : tt.shape().dim()) spec.shape.push_back(d.has_dim_value() ? d.dim_value() : -1);
    specs.push_back(std::move(spec));
  }
  return specs;
}

int64_t SampleAxis(const std::map<std::string, int64_t>& axes, const std::string& name) {
  const auto it = axes.find(name);
  return it == axes.end() ? 0 : it->second;
}

int64_t ChooseBatchSize(const std::vector<InputSpec>& inputs, const std::map<std::string, std::vector<int64_t>>& shapes,
                        int64_t requested, const std::map<std::string, int64_t>& axes) {
  int64_t from_shapes = 0;
  for (const auto& [name, shape] : shapes) {
    const int64_t axis = SampleAxis(axes, name);
    if (axis < 0 || axis >= static_cast<int64_t>(shape.size())) continue;  // fixed input or scalar
    if (from_shapes && shape[axis] != from_shapes) {
      throw Error(fmt::format("--calibration_shapes: inputs disagree on the batch size ({} vs {} for '{}')", from_shapes,
                              shape[axis], name));
    }
    from_shapes = shape[axis];
  }
  int64_t static_batch = 0;
  for (const auto& in : inputs) {
    const int64_t axis = SampleAxis(axes, in.name);
    if (axis >= 0 && axis < static_cast<int64_t>(in.shape.size()) && in.shape[axis] > 0) static_batch = in.shape[axis];
  }
  int64_t batch = from_shapes ? from_shapes : (static_batch ? static_batch : (requested > 0 ? requested : 1));
  if (static_batch && batch != static_batch) {
    throw Error(fmt::format("calibration batch size {} does not match the model's fixed batch size {}", batch, static_batch));
  }
  if (requested > 0 && requested != batch) {
    throw Error(fmt::format("--calibration_batch_size {} disagrees with the batch size {} from {}", requested, batch,
                            from_shapes ? "--calibration_shapes" : "the model's fixed input shape"));
  }
  if (batch < 1) throw Error(fmt::format("calibration batch size must be at least 1, got {}", batch));
  return batch;
}

}  // namespace ptqkit
