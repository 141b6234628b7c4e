// CountFp16BiasOverflows does ONNX Runtime's WeightBiasQuantization arithmetic in float16: a bias
// counts when bias / (x_scale * w_scale) is no finite float16 (above 65504), under the rule's own
// conditions (a per-tensor input scale, float16 scales and bias).
#include "quant/rewrite/ort_bias_overflow.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "onnx/float16.h"

namespace ptqkit {
namespace {

onnx::TensorProto Half16(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT16);
  for (int64_t d : dims) t.add_dims(d);
  std::string raw;
  for (float v : values) {
    const uint16_t h = FloatToHalf(v);
    raw.append(reinterpret_cast<const char*>(&h), sizeof(h));
  }
  t.set_raw_data(raw);
  return t;
}

// x -> DQ(x_scale) -> Conv(DQ(w, w_scale), bias): two output channels.
onnx::GraphProto ConvGraph(const std::vector<int64_t>& x_scale_dims, float x_scale, float w_scale,
                           const std::vector<float>& bias) {
  onnx::GraphProto g;
  *g.add_initializer() = Half16("xs", x_scale_dims, {x_scale});
  *g.add_initializer() = Half16("ws", {2}, {w_scale, w_scale});
  *g.add_initializer() = Half16("b", {2}, bias);
  auto* dq_x = g.add_node();
  dq_x->set_op_type("DequantizeLinear");
  dq_x->add_input("xq");
  dq_x->add_input("xs");
  dq_x->add_output("x");
  auto* dq_w = g.add_node();
  dq_w->set_op_type("DequantizeLinear");
  dq_w->add_input("wq");
  dq_w->add_input("ws");
  dq_w->add_output("w");
  auto* axis = dq_w->add_attribute();  // per output channel, as the rule wants for a Conv
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(0);
  auto* conv = g.add_node();
  conv->set_op_type("Conv");
  for (const char* i : {"x", "w", "b"}) conv->add_input(i);
  conv->add_output("y");
  return g;
}

TEST(OrtBiasOverflow, CountsAQuotientAboveFloat16sRange) {
  // x_scale * w_scale = 1e-4 (1.0002e-4 in float16): 6.5 / it = 64987 fits, 6.6 / it = 65987 does not.
  EXPECT_EQ(CountFp16BiasOverflows(ConvGraph({}, 0.01f, 0.01f, {6.5f, -1.0f})), 0);
  EXPECT_EQ(CountFp16BiasOverflows(ConvGraph({}, 0.01f, 0.01f, {1.0f, -6.6f})), 1);
}

TEST(OrtBiasOverflow, OnlyWhereTheRuleApplies) {
  // A per-channel input scale: the rule leaves the node alone.
  onnx::GraphProto g = ConvGraph({2}, 0.01f, 0.01f, {100.0f, 100.0f});
  g.mutable_initializer(0)->CopyFrom(Half16("xs", {2}, {0.01f, 0.01f}));
  EXPECT_EQ(CountFp16BiasOverflows(g), 0);
  // No DQ in front of the weight (a float weight): not counted either.
  g = ConvGraph({}, 0.01f, 0.01f, {100.0f, 100.0f});
  g.mutable_node(2)->set_input(1, "w_float");
  EXPECT_EQ(CountFp16BiasOverflows(g), 0);
  // Weight scales along another axis than the output channels: the rule skips it.
  g = ConvGraph({}, 0.01f, 0.01f, {100.0f, 100.0f});
  g.mutable_node(1)->mutable_attribute(0)->set_i(1);
  EXPECT_EQ(CountFp16BiasOverflows(g), 0);
  g.mutable_node(1)->mutable_attribute(0)->set_i(0);
  EXPECT_EQ(CountFp16BiasOverflows(g), 1);
}

}  // namespace
}  // namespace ptqkit
