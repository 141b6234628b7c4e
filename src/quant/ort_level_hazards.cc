#include "quant/ort_level_hazards.h"

#include <map>
#include <string>

namespace ptqkit {

int CountFp8ClampQuantizePairs(const onnx::GraphProto& graph) {
  std::map<std::string, int32_t> initializer_type;
  for (const auto& t : graph.initializer()) initializer_type[t.name()] = t.data_type();
  std::map<std::string, std::string> producer_op;
  for (const auto& n : graph.node()) {
    for (const auto& out : n.output()) producer_op[out] = n.domain().empty() ? n.op_type() : "";
  }
  int pairs = 0;
  for (const auto& n : graph.node()) {
    if (n.op_type() != "QuantizeLinear" || !n.domain().empty() || n.input_size() < 3) continue;
    const auto zp = initializer_type.find(n.input(2));
    if (zp == initializer_type.end()) continue;
    const int32_t type = zp->second;
    const bool fp8 = type == onnx::TensorProto::FLOAT8E4M3FN || type == onnx::TensorProto::FLOAT8E4M3FNUZ ||
                     type == onnx::TensorProto::FLOAT8E5M2 || type == onnx::TensorProto::FLOAT8E5M2FNUZ;
    const auto producer = producer_op.find(n.input(0));
    if (fp8 && producer != producer_op.end() && (producer->second == "Relu" || producer->second == "Clip")) ++pairs;
  }
  return pairs;
}

}  // namespace ptqkit
