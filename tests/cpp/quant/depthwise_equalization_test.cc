// Depthwise input equalization: the gains, where it applies, and that the float function is kept.
#include "quant/corrections/depthwise_equalization.h"

#include <gtest/gtest.h>

#include <cmath>

#include "onnx/graph_builder.h"
#include "onnx/graph_index.h"
#include "onnx/session_model.h"
#include "runtime/session.h"

namespace ptqkit {
namespace {

TEST(DepthwiseEqualization, GainsBringEveryChannelToTheLargestCappedForDeadOnes) {
  const auto g = DepthwiseGains({8.0f, 2.0f, 0.0f, 0.01f});
  EXPECT_DOUBLE_EQ(g[0], 1.0);
  EXPECT_DOUBLE_EQ(g[1], 4.0);
  EXPECT_DOUBLE_EQ(g[2], kMaxDepthwiseGain);  // dead on the calibration data: amplified at most 64x
  EXPECT_DOUBLE_EQ(g[3], kMaxDepthwiseGain);
  for (double v : DepthwiseGains({0.0f, 0.0f})) EXPECT_DOUBLE_EQ(v, 1.0);
}

// x [1,8,5,5] -> Conv 1x1 (8->16) -> `activation` -> depthwise Conv 3x3 (16 groups) -> Relu -> Conv 1x1 -> Relu
onnx::ModelProto DepthwiseBlock(const std::string& activation) {
  GraphBuilder b;
  b.Input("x", {1, 8, 5, 5}).Weight("w_pw", {16, 8, 1, 1}, 0.5f).Weight("b_pw", {16}, 0.5f);
  b.Weight("w_dw", {16, 1, 3, 3}, 0.5f).Weight("w_out", {16, 16, 1, 1}, 0.5f);
  b.Node("Conv", {"x", "w_pw", "b_pw"}, {"p"}, "pw").Node(activation, {"p"}, {"pr"}, "pw_act");
  b.Node("Conv", {"pr", "w_dw"}, {"d"}, "dw", {{"group", {16}}, {"pads", {1, 1, 1, 1}}});
  b.Node("Relu", {"d"}, {"dr"}, "dw_relu").Node("Conv", {"dr", "w_out"}, {"o"}, "out_conv");
  b.Node("Relu", {"o"}, {"out"}, "out_relu").Output("out");
  return b.Build(14);  // HardSwish
}

std::vector<float> RunBlock(const onnx::ModelProto& m) {
  HostTensor x(DataType::kFloat, {1, 8, 5, 5});
  for (int64_t i = 0; i < x.NumElements(); ++i) x.Data<float>()[i] = std::sin(0.7f * static_cast<float>(i));
  RuntimeOptions basic;
  basic.basic_optimizations_only = true;
  InferenceSession session(onnxio::MakeSessionModel(m), basic);
  const HostTensor out = session.Run(Batch{{"x", x}}, {"out"}).at(0);
  return {out.Data<float>(), out.Data<float>() + out.NumElements()};
}

// Equalizes the block's one site with one outlier channel; checks the outputs are kept.
onnx::ModelProto Equalized(const std::string& activation) {
  onnx::ModelProto m = DepthwiseBlock(activation);
  const std::vector<float> before = RunBlock(m);
  const GraphIndex index(m.graph());
  const auto sites = FindDepthwiseSites(index, PlanPlacement(index, {}));
  EXPECT_EQ(sites.size(), 1u);  // the depthwise Conv only
  if (sites.size() != 1) return m;
  EXPECT_EQ(index.node(sites[0].conv).name(), "dw");
  EXPECT_EQ(sites[0].input, "pr");
  std::vector<float> amax(16);
  for (int c = 0; c < 16; ++c) amax[c] = c == 15 ? 1.6f : 0.1f * static_cast<float>(c % 4 + 1);  // one outlier channel
  EXPECT_EQ(EqualizeDepthwiseInputs(m.mutable_graph(), index, sites, {{"pr", amax}}), 1);
  EXPECT_EQ(GraphIndex(m.graph()).Constant("w_dw"), nullptr);  // replaced by the divided weights
  const std::vector<float> got = RunBlock(m);
  EXPECT_EQ(got.size(), before.size());
  for (size_t i = 0; i < std::min(got.size(), before.size()); ++i) {
    EXPECT_NEAR(got[i], before[i], 1e-5 * (1.0 + std::fabs(before[i]))) << i;
  }
  return m;
}

// After a HardSwish (not positively homogeneous) the gain is a Mul on the depthwise input edge.
TEST(DepthwiseEqualization, PutsAGainMulOnTheInputEdgeAfterAHardSwish) {
  const onnx::ModelProto m = Equalized("HardSwish");
  const GraphIndex after(m.graph());
  const int mul = after.Producer(after.node(after.FindNode("dw")).input(0));
  ASSERT_GE(mul, 0);
  EXPECT_EQ(after.node(mul).op_type(), "Mul");
  EXPECT_EQ(after.node(mul).input(0), "pr");
  const std::vector<float> gains = TensorToFloats(*after.Constant(after.node(mul).input(1)));
  ASSERT_EQ(gains.size(), 16u);
  EXPECT_FLOAT_EQ(gains[15], 1.0f);
  EXPECT_FLOAT_EQ(gains[0], 16.0f);
  EXPECT_FLOAT_EQ(gains[1], 8.0f);
  EXPECT_NE(after.Constant("w_pw"), nullptr);  // the producer is untouched
}

// After a Relu the gain goes into the producing Conv's output channels (cross-layer form): no node
// is added, the 1x1 Conv's weight and bias are scaled, the depthwise weights divided.
TEST(DepthwiseEqualization, FoldsTheGainIntoTheConvBeforeARelu) {
  const onnx::ModelProto m = Equalized("Relu");
  const GraphIndex after(m.graph());
  EXPECT_EQ(after.num_nodes(), 6);
  EXPECT_EQ(after.node(after.FindNode("dw")).input(0), "pr");
  const onnx::NodeProto& pw = after.node(after.FindNode("pw"));
  EXPECT_EQ(after.Constant("w_pw"), nullptr);
  EXPECT_EQ(after.Constant("b_pw"), nullptr);
  const std::vector<float> bias = TensorToFloats(*after.Constant(pw.input(2)));
  const std::vector<float> original = TensorToFloats(*GraphIndex(DepthwiseBlock("Relu").graph()).Constant("b_pw"));
  EXPECT_FLOAT_EQ(bias[0], 16.0f * original[0]);
  EXPECT_FLOAT_EQ(bias[15], original[15]);
}

// x -> Conv 1x1 -> `activation` -> [zero Pad] -> depthwise Conv: is the depthwise input a site?
size_t SitesAfter(const std::string& activation, bool pad) {
  GraphBuilder b;
  b.Input("x", {1, 8, 5, 5}).Weight("w_pw", {16, 8, 1, 1}, 0.5f).Weight("w_dw", {16, 1, 3, 3}, 0.5f);
  b.Weight("lo", {}, 0.0f).Weight("hi", {}, 6.0f).Int64Initializer("pads", {0, 0, 1, 1, 0, 0, 1, 1});
  b.Node("Conv", {"x", "w_pw"}, {"p"}, "pw");
  if (activation == "Clip") {
    b.Node("Clip", {"p", "lo", "hi"}, {"a"}, "act");
  } else {
    b.Node(activation, {"p"}, {"a"}, "act");
  }
  if (pad) b.Node("Pad", {"a", "pads"}, {"padded"}, "pad");
  b.Node("Conv", {pad ? "padded" : "a", "w_dw"}, {"d"}, "dw", {{"group", {16}}});
  b.Node("Relu", {"d"}, {"out"}, "dw_relu").Output("out");
  const onnx::ModelProto m = b.Build(14);  // HardSwish
  const GraphIndex index(m.graph());
  return FindDepthwiseSites(index, PlanPlacement(index, {})).size();
}

// A capped activation (ReLU6 written as Clip, Sigmoid, HardSigmoid) lets every channel reach the
// cap on some input: equalizing its output clips the amplified channels there (EfficientNet-Lite0).
TEST(DepthwiseEqualization, LeavesInputsOfCappedActivationsAlone) {
  EXPECT_EQ(SitesAfter("Clip", false), 0u);
  EXPECT_EQ(SitesAfter("Clip", true), 0u);  // through a zero Pad (TensorFlow's SAME padding)
  EXPECT_EQ(SitesAfter("HardSigmoid", false), 0u);
  EXPECT_EQ(SitesAfter("Sigmoid", true), 0u);
  EXPECT_EQ(SitesAfter("Relu", false), 1u);
  EXPECT_EQ(SitesAfter("Relu", true), 1u);
  EXPECT_EQ(SitesAfter("HardSwish", false), 1u);  // unbounded above
}

}  // namespace
}  // namespace ptqkit

namespace ptqkit {
namespace {

// Conv -> [Relu] -> [zero Pad] -> t: the Conv can take the gain; not through a HardSwish or a tensor
// something else reads too.
TEST(DepthwiseEqualization, FindsTheConvAGainCanFoldInto) {
  for (const bool relu : {true, false}) {
    for (const bool pad : {true, false}) {
      GraphBuilder b;
      b.Input("x", {1, 4, 5, 5}).Weight("w", {6, 4, 1, 1}, 0.5f).Int64Initializer("pads", {0, 0, 1, 1, 0, 0, 1, 1});
      std::string t = "c";
      b.Node("Conv", {"x", "w"}, {"c"}, "conv");
      if (relu) b.Node("Relu", {t}, {"r"}, "relu"), t = "r";
      if (pad) b.Node("Pad", {t, "pads"}, {"p"}, "pad"), t = "p";
      b.Node("Identity", {t}, {"out"}, "id").Output("out");
      const onnx::ModelProto m = b.Build(14);
      const GraphIndex index(m.graph());
      EXPECT_EQ(FoldableProducerConv(index, t), index.FindNode("conv")) << relu << pad;
    }
  }
  GraphBuilder b;
  b.Input("x", {1, 4, 5, 5}).Weight("w", {6, 4, 1, 1}, 0.5f);
  b.Node("Conv", {"x", "w"}, {"c"}, "conv").Node("HardSwish", {"c"}, {"h"}, "hs").Node("Relu", {"c"}, {"r"}, "relu");
  b.Node("Add", {"h", "r"}, {"out"}, "add").Output("out");
  const onnx::ModelProto m = b.Build(14);
  const GraphIndex index(m.graph());
  EXPECT_EQ(FoldableProducerConv(index, "h"), -1);  // HardSwish(g x) != g HardSwish(x)
  EXPECT_EQ(FoldableProducerConv(index, "r"), -1);  // "c" is read by the HardSwish too
}

}  // namespace
}  // namespace ptqkit
