#include <fmt/format.h>

#include "onnx/model_prep.h"
#include "onnx/op_traits.h"
#include "onnx/tensor_size.h"
#include "ptqkit/error.h"

namespace ptqkit::onnxio {
namespace {

// Q/DQ nodes anywhere, control-flow subgraphs included.
void CheckNotQuantized(const onnx::GraphProto& graph, const std::string& path) {
  for (const auto& n : graph.node()) {
    const OpRole role = TraitsOf(std::string_view(n.op_type())).role;  // any domain: com.microsoft's too
    if (role == OpRole::kQuantize || role == OpRole::kDequantize) {
      throw Error(fmt::format("model '{}' is already quantized (node '{}' is a {}); give ptqkit the FP32 model", path,
                              n.name(), n.op_type()));
    }
    for (const auto& attr : n.attribute()) {
      if (attr.has_g()) CheckNotQuantized(attr.g(), path);
    }
  }
}

}  // namespace

int64_t DefaultOpset(const onnx::ModelProto& model) {
  for (const auto& op : model.opset_import()) {
    if (op.domain().empty() || op.domain() == "ai.onnx") return op.version();
  }
  return 0;
}

void SetDefaultOpset(onnx::ModelProto* model, int64_t version) {
  for (auto& op : *model->mutable_opset_import()) {
    if (op.domain().empty() || op.domain() == "ai.onnx") {
      op.set_version(version);
      return;
    }
  }
  auto* op = model->add_opset_import();
  op->set_domain("");
  op->set_version(version);
}

void CheckModel(const onnx::ModelProto& model, const std::string& path) {
  // IR 3 is the first with operator sets; older IR versions (ONNX 1.0) are not loaded by ONNX
  // Runtime either. Newer IR versions come with the opset upgrade (UpgradeOpset).
  if (model.ir_version() < 3) {
    throw Error(fmt::format("model '{}' has IR version {}; ptqkit reads IR version 3 (ONNX 1.1) and newer", path,
                            model.ir_version()));
  }
  const int64_t opset = DefaultOpset(model);
  if (opset == 0) throw Error(fmt::format("model '{}' does not import the default ONNX opset", path));
  if (opset > 21) {
    throw Error(fmt::format("model '{}' uses opset {}; ptqkit supports opsets 7 to 21 (13 to 21 without upgrade)", path, opset));
  }
  if (opset < 7) throw Error(fmt::format("model '{}' uses opset {}; ptqkit can upgrade opsets 7 to 12 only", path, opset));
  CheckNotQuantized(model.graph(), path);
  CheckTensorSizes(model.graph(), path);
}

}  // namespace ptqkit::onnxio
