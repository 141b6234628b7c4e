#include "autotune/cost_model_backend.h"

#include <set>

#include "onnx/op_traits.h"

namespace ptqkit::autotune {

LatencySummary CostModelBackend::Measure(const onnx::ModelProto& model) {
  ++measurements_;
  std::set<std::string> dequantized;
  for (const auto& node : model.graph().node()) {
    if (HasRole(node, OpRole::kDequantize)) dequantized.insert(node.output(0));
  }
  double total = 0.0;
  for (const auto& node : model.graph().node()) {
    if (IsQdqOp(node)) {
      total += qdq_ms_;
      continue;
    }
    auto it = costs_.find(node.name());
    if (it == costs_.end()) continue;
    bool quantized = false;
    for (const auto& in : node.input()) quantized = quantized || dequantized.count(in) > 0;
    total += quantized ? it->second.quantized_ms : it->second.float_ms;
  }
  LatencySummary s;
  s.median_ms = s.p10_ms = s.p90_ms = total;
  s.runs = 1;
  return s;
}

}  // namespace ptqkit::autotune
