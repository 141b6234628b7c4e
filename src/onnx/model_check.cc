#include <fmt/format.h>

#include "onnx/model_prep.h"
#include "ptqkit/error.h"

namespace ptqkit::onnxio {

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
  if (model.ir_version() < 7) {
    throw Error(fmt::format("model '{}' has IR version {}; ptqkit needs IR version 7 or newer (re-export with a newer exporter)",
                            path, model.ir_version()));
  }
  const int64_t opset = DefaultOpset(model);
  if (opset == 0) throw Error(fmt::format("model '{}' does not import the default ONNX opset", path));
  if (opset > 21) {
    throw Error(fmt::format("model '{}' uses opset {}; ptqkit supports opsets 7 to 21 (13 to 21 without upgrade)", path, opset));
  }
  if (opset < 7) throw Error(fmt::format("model '{}' uses opset {}; ptqkit can upgrade opsets 7 to 12 only", path, opset));
  for (const auto& n : model.graph().node()) {
    if (n.op_type() == "QuantizeLinear" || n.op_type() == "DequantizeLinear") {
      throw Error(fmt::format("model '{}' is already quantized (node '{}' is a {}); give ptqkit the FP32 model", path,
                              n.name(), n.op_type()));
    }
  }
}

}  // namespace ptqkit::onnxio
