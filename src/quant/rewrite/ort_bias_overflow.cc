#include "quant/rewrite/ort_bias_overflow.h"

#include <cmath>
#include <vector>

#include "onnx/float16.h"
#include "onnx/graph_index.h"
#include "onnx/op_traits.h"

namespace ptqkit {
namespace {

// float16 arithmetic as ONNX Runtime does it for MLFloat16 Mul/Div: each result rounded to half.
float Half(float v) { return HalfToFloat(FloatToHalf(v)); }

// The scale initializer of the DequantizeLinear producing `tensor`, or nullptr.
const onnx::TensorProto* DqScale(const GraphIndex& index, const std::string& tensor) {
  const int p = index.Producer(tensor);
  if (p < 0) return nullptr;
  const onnx::NodeProto& dq = index.node(p);
  if (!HasRole(dq, OpRole::kDequantize) || dq.input_size() < 2) return nullptr;
  return index.Constant(dq.input(1));
}

bool Overflows(const GraphIndex& index, const onnx::NodeProto& n) {
  if (n.input_size() < 3 || n.input(2).empty()) return false;
  const onnx::TensorProto* bias = index.Constant(n.input(2));
  if (!bias || bias->data_type() != onnx::TensorProto::FLOAT16 || bias->dims_size() != 1) return false;
  const onnx::TensorProto* x_scale = DqScale(index, n.input(0));
  const onnx::TensorProto* w_scale = DqScale(index, n.input(1));
  if (!x_scale || !w_scale || x_scale->data_type() != onnx::TensorProto::FLOAT16 ||
      w_scale->data_type() != onnx::TensorProto::FLOAT16) {
    return false;
  }
  const std::vector<float> sx = TensorToFloats(*x_scale), sw = TensorToFloats(*w_scale), b = TensorToFloats(*bias);
  if (sx.size() != 1 || (sw.size() != 1 && sw.size() != b.size())) return false;  // the rule's own conditions
  if (sw.size() > 1) {  // per channel: only along the output axis it expects (so never a ConvTranspose's 1)
    const onnx::NodeProto& dq_w = index.node(index.Producer(n.input(1)));
    // The rule expects Gemm's output axis, and axis 0 for every convolution.
    const int64_t expected = TraitsOf(n).weight_layout == WeightLayoutKind::kGemm ? WeightOutputAxis(n, 2) : 0;
    if (IntAttribute(dq_w, "axis", 1) != expected) return false;
  }
  for (size_t c = 0; c < b.size(); ++c) {
    const float scale = Half(sx[0] * sw[sw.size() == 1 ? 0 : c]);
    const float quotient = Half(b[c] / scale);
    if (!std::isfinite(quotient)) return true;
  }
  return false;
}

}  // namespace

int CountFp16BiasOverflows(const onnx::GraphProto& graph) {
  const GraphIndex index(graph);
  int count = 0;
  for (const auto& n : graph.node()) {
    if (TraitsOf(n).bias_input >= 0) {
      count += Overflows(index, n) ? 1 : 0;
    }
  }
  return count;
}

}  // namespace ptqkit
