// Bias correction: the shift formula, the fake-quantized weights it assumes, and the graph edits.
#include "quant/corrections/bias_correction.h"

#include <gtest/gtest.h>

#include <cmath>

#include "onnx/graph_builder.h"
#include "onnx/graph_index.h"
#include "quant/formats/numerics.h"
#include "quant_test_support.h"

namespace ptqkit {
namespace {

TEST(BiasCorrection, OutputShiftSumsWeightErrorTimesInputMeanPerGroup) {
  // 2 groups (depthwise-like: 2 in, 2 out, 1x2 taps). Channel 0 reads input 0, channel 1 input 1.
  const std::vector<float> w = {1.0f, 2.0f, 3.0f, 4.0f};
  const std::vector<float> wq = {1.5f, 2.0f, 3.0f, 3.0f};  // errors: +0.5 on channel 0, -1 on channel 1
  const auto shift = ConvOutputShift(w, wq, {2, 1, 1, 2}, 2, {10.0, -2.0});
  ASSERT_EQ(shift.size(), 2u);
  EXPECT_DOUBLE_EQ(shift[0], 0.5 * 10.0);
  EXPECT_DOUBLE_EQ(shift[1], -1.0 * -2.0);
  // The same weights as a dense conv (1 group, 2 out x ... ) read both inputs.
  const auto dense = ConvOutputShift({1, 2, 3, 4}, {1.5f, 2, 3, 3}, {2, 2, 1, 1}, 1, {10.0, -2.0});
  EXPECT_DOUBLE_EQ(dense[0], 0.5 * 10.0 + 0.0 * -2.0);
  EXPECT_DOUBLE_EQ(dense[1], 0.0 * 10.0 + -1.0 * -2.0);
}

TEST(BiasCorrection, TapCoverageCountsOutputPositionsThatReadTheInputNotThePadding) {
  onnx::NodeProto conv;
  conv.set_op_type("Conv");
  auto* pads = conv.add_attribute();
  pads->set_name("pads");
  pads->set_type(onnx::AttributeProto::INTS);
  for (int i = 0; i < 4; ++i) pads->add_ints(1);
  // 3x3 kernel, pads 1, on a 3x12 map: output 3x12; the top row of taps reads padding at output row 0.
  const auto c = TapCoverage(conv, {3, 3}, {3, 12});
  ASSERT_EQ(c.size(), 9u);
  EXPECT_DOUBLE_EQ(c[0], (2.0 / 3.0) * (11.0 / 12.0));
  EXPECT_DOUBLE_EQ(c[1], 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(c[4], 1.0);
  EXPECT_DOUBLE_EQ(c[8], (2.0 / 3.0) * (11.0 / 12.0));
  // No padding: every tap always reads the input.
  onnx::NodeProto valid;
  valid.set_op_type("Conv");
  for (double v : TapCoverage(valid, {3, 3}, {5, 5})) EXPECT_DOUBLE_EQ(v, 1.0);
  // SAME_UPPER, stride 2 on 4 wide: output 2, total padding 1 at the end; the last tap at output 1 reads it.
  onnx::NodeProto same;
  same.set_op_type("Conv");
  auto* ap = same.add_attribute();
  ap->set_name("auto_pad");
  ap->set_type(onnx::AttributeProto::STRING);
  ap->set_s("SAME_UPPER");
  auto* st = same.add_attribute();
  st->set_name("strides");
  st->set_type(onnx::AttributeProto::INTS);
  st->add_ints(2);
  const auto s1 = TapCoverage(same, {3}, {4});
  ASSERT_EQ(s1.size(), 3u);
  EXPECT_DOUBLE_EQ(s1[0], 1.0);
  EXPECT_DOUBLE_EQ(s1[2], 0.5);
  // The shift weights each tap by its coverage.
  const auto shift = ConvOutputShift({0, 0, 0}, {1, 1, 1}, {1, 1, 3}, 1, {2.0}, s1);
  EXPECT_DOUBLE_EQ(shift[0], 2.0 * (1.0 + 1.0 + 0.5));
}

TEST(BiasCorrection, FakeQuantizedWeightIsTheRewritesGridPerChannel) {
  const std::vector<float> w = {0.3f, -1.27f, 0.011f, 0.5f, 0.25f, -0.124f};
  RewriteOptions int8;
  const auto q = FakeQuantizedWeight(w, {2, 3}, int8, "w");
  const float s0 = 1.27f / 127.0f, s1 = 0.5f / 127.0f;
  for (int i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(q[i], DequantizeInt8(QuantizeInt8(w[i], s0), s0));
  for (int i = 3; i < 6; ++i) EXPECT_FLOAT_EQ(q[i], DequantizeInt8(QuantizeInt8(w[i], s1), s1));
  EXPECT_NE(q[2], w[2]);  // 0.011 is not on channel 0's grid
  RewriteOptions reduced;
  reduced.reduce_range = true;
  const auto r = FakeQuantizedWeight(w, {2, 3}, reduced, "w");
  EXPECT_FLOAT_EQ(r[0], DequantizeInt8(QuantizeInt8(w[0], 1.27f / 63.0f), 1.27f / 63.0f));
  RewriteOptions fp8;
  fp8.format = &FindFormat("fp8", "--quantize_mode");
  const auto f = FakeQuantizedWeight(w, {2, 3}, fp8, "w");
  const float f0 = 1.27f / 448.0f;
  EXPECT_FLOAT_EQ(f[0], Float8E4M3FNToFloat(QuantizeFloat8E4M3FN(w[0], f0)) * f0);
}

// With a constant input (every pixel of channel c equal to mean[c]) and a 1x1 conv, the corrected
// quantized conv gives the FP32 conv's output.
TEST(BiasCorrection, CorrectedQuantizedConvMatchesFloatOnItsMeanInput) {
  GraphBuilder b;
  b.Input("x", {1, 16, 4, 4}).Weight("w", {32, 16, 1, 1}, 0.37f).Weight("bias", {32});
  b.Node("Conv", {"x", "w", "bias"}, {"y"}, "conv").Node("Relu", {"y"}, {"out"}).Output("out");
  onnx::ModelProto m = b.Build();
  const std::vector<float> w = TensorToFloats(*Init(m, "w"));
  const std::vector<float> bias = TensorToFloats(*Init(m, "bias"));
  std::vector<double> mean(16);
  for (int c = 0; c < 16; ++c) mean[c] = 0.25 * c - 1.3;
  GraphIndex index(m.graph());
  const Placement plan = PlanPlacement(index, {});
  EXPECT_EQ(ConvInputsToCorrect(index, plan), std::vector<std::string>{"x"});
  RewriteOptions options;
  ASSERT_EQ(CorrectConvBiases(m.mutable_graph(), index, plan, {{"x", ConvInputStatistics{mean, {}}}}, options), 1);
  GraphIndex after(m.graph());
  const int conv = after.FindNode("conv");
  const std::vector<float> corrected = TensorToFloats(*after.Constant(m.graph().node(conv).input(2)));
  const std::vector<float> wq = FakeQuantizedWeight(w, {32, 16, 1, 1}, options, "w");
  double worst_before = 0.0, worst_after = 0.0;
  for (int o = 0; o < 32; ++o) {
    double fp = bias[o], before = bias[o], now = corrected[o];
    for (int c = 0; c < 16; ++c) {
      fp += w[o * 16 + c] * mean[c];
      before += wq[o * 16 + c] * mean[c];
      now += wq[o * 16 + c] * mean[c];
    }
    worst_before = std::max(worst_before, std::fabs(before - fp));
    worst_after = std::max(worst_after, std::fabs(now - fp));
  }
  EXPECT_GT(worst_before, 1e-4);  // rounding did shift the outputs
  EXPECT_LT(worst_after, 1e-6);
}

TEST(BiasCorrection, ConvWithoutBiasGetsOneAndSharedBiasIsCopied) {
  {
    GraphBuilder b;
    b.Input("x", {1, 16, 4, 4}).Weight("w", {32, 16, 3, 3});
    b.Node("Conv", {"x", "w"}, {"y"}, "conv", {{"pads", {1, 1, 1, 1}}}).Node("Relu", {"y"}, {"out"}).Output("out");
    onnx::ModelProto m = b.Build();
    GraphIndex index(m.graph());
    const Placement plan = PlanPlacement(index, {});
    ASSERT_EQ(CorrectConvBiases(m.mutable_graph(), index, plan, {{"x", ConvInputStatistics{std::vector<double>(16, 0.7), {}}}}, {}), 1);
    ASSERT_EQ(m.graph().node(0).input_size(), 3);
    EXPECT_NE(Init(m, m.graph().node(0).input(2)), nullptr);
  }
  {
    GraphBuilder b;
    b.Input("x", {1, 16, 4, 4}).Weight("w", {32, 16, 1, 1}).Weight("w2", {32, 16, 1, 1}).Weight("bias", {32});
    b.Node("Conv", {"x", "w", "bias"}, {"y"}, "conv").Node("Relu", {"y"}, {"out"}).Output("out");
    b.Node("Conv", {"x", "w2", "bias"}, {"y2"}, "conv2").Node("Relu", {"y2"}, {"out2"}).Output("out2");
    onnx::ModelProto m = b.Build();
    const std::vector<float> original = TensorToFloats(*Init(m, "bias"));
    GraphIndex index(m.graph());
    const Placement plan = PlanPlacement(index, {});
    ASSERT_EQ(CorrectConvBiases(m.mutable_graph(), index, plan, {{"x", ConvInputStatistics{std::vector<double>(16, 0.7), {}}}}, {}), 2);
    EXPECT_EQ(TensorToFloats(*Init(m, "bias")), original);  // the shared original is left alone
    EXPECT_NE(m.graph().node(0).input(2), "bias");
    EXPECT_NE(m.graph().node(2).input(2), "bias");
    EXPECT_NE(m.graph().node(0).input(2), m.graph().node(2).input(2));
  }
}

TEST(BiasCorrection, DepthwiseConvUsesItsOwnChannelsMeanAndSkipsMismatchedMeans) {
  GraphBuilder b;
  b.Input("x", {1, 16, 4, 4}).Weight("w", {16, 1, 3, 3}, 0.9f).Weight("bias", {16});
  b.Node("Conv", {"x", "w", "bias"}, {"y"}, "dw", {{"group", {16}}, {"pads", {1, 1, 1, 1}}});
  b.Node("Relu", {"y"}, {"out"}).Output("out");
  onnx::ModelProto m = b.Build();
  const std::vector<float> w = TensorToFloats(*Init(m, "w"));
  const std::vector<float> bias = TensorToFloats(*Init(m, "bias"));
  std::vector<double> mean(16, 0.0);
  mean[5] = 2.0;  // only channel 5 has a non-zero mean: only its bias may move
  GraphIndex index(m.graph());
  const Placement plan = PlanPlacement(index, {});
  EXPECT_EQ(CorrectConvBiases(m.mutable_graph(), index, plan, {{"x", ConvInputStatistics{std::vector<double>(8, 1.0), {}}}}, {}), 0);
  ASSERT_EQ(CorrectConvBiases(m.mutable_graph(), index, plan, {{"x", ConvInputStatistics{mean, {}}}}, {}), 1);
  const std::vector<float> now = TensorToFloats(*Init(m, m.graph().node(0).input(2)));
  const std::vector<float> wq = FakeQuantizedWeight(w, {16, 1, 3, 3}, {}, "w");
  for (int c = 0; c < 16; ++c) {
    double err = 0.0;
    for (int k = 0; k < 9; ++k) err += static_cast<double>(wq[c * 9 + k]) - w[c * 9 + k];
    EXPECT_NEAR(now[c], bias[c] - err * mean[c], 1e-7) << "channel " << c;
  }
}

}  // namespace
}  // namespace ptqkit
