#include "accuracy/padding_mask_input.h"

namespace ptqkit::accuracy {

std::string PaddingMaskInput(const onnx::GraphProto& graph, const std::string& option) {
  if (option == "none") return "";
  if (!option.empty()) return option;
  for (const auto& input : graph.input()) {
    if (input.name() != "attention_mask" || !input.type().has_tensor_type()) continue;
    const auto& t = input.type().tensor_type();
    const bool integer = t.elem_type() == onnx::TensorProto::INT64 || t.elem_type() == onnx::TensorProto::INT32 ||
                         t.elem_type() == onnx::TensorProto::BOOL;
    if (integer && t.has_shape() && t.shape().dim_size() == 2) return input.name();
  }
  return "";
}

}  // namespace ptqkit::accuracy
