// Activation smoothing: the scale formula, where it applies, and that the float function is kept.
#include "quant/corrections/activation_smoothing.h"

#include <gtest/gtest.h>

#include <cmath>

#include "onnx/graph_builder.h"
#include "onnx/graph_index.h"
#include "quant_test_support.h"

namespace ptqkit {
namespace {

TEST(ActivationSmoothing, ScalesFollowTheSmoothQuantFormula) {
  const auto s = SmoothingScales({4.0f, 0.25f, 0.0f, 9.0f}, {1.0f, 0.5f, 0.3f, 0.0f}, 0.5);
  EXPECT_FLOAT_EQ(s[0], 2.0f);                       // sqrt(4) / sqrt(1)
  EXPECT_FLOAT_EQ(s[1], 0.5f / std::sqrt(0.5f));     // sqrt(0.25) / sqrt(0.5)
  EXPECT_FLOAT_EQ(s[2], 1.0f);                       // dead channel: nothing to balance
  EXPECT_FLOAT_EQ(s[3], 1.0f);                       // zero weight row
  const auto full = SmoothingScales({4.0f}, {0.5f}, 1.0);
  EXPECT_FLOAT_EQ(full[0], 4.0f);  // alpha 1: the activation's range moves into the weight entirely
}

std::vector<SmoothingSite> SitesOf(const GraphIndex& index, const Placement& plan, const std::string& tensor) {
  std::vector<SmoothingSite> sites;
  for (auto& s : FindSmoothingSites(index, plan)) {
    if (s.tensor == tensor) sites.push_back(s);
  }
  return sites;
}

// x [2,8,64] -> MatMul(w0 64x64) -> h -> Mul(h, half) -> g -> MatMul(g, w1 64x32) -> y
GraphBuilder GeluTail(bool extra_reader) {
  GraphBuilder b;
  b.Input("x", {2, 8, 64}).Weight("w0", {64, 64}).Weight("w1", {64, 32}).Weight("half", {1}, 0.5f);
  b.Node("MatMul", {"x", "w0"}, {"h"}, "mm0");
  b.Node("Mul", {"h", "half"}, {"g"}, "mul");
  b.Node("MatMul", {"g", "w1"}, {"y"}, "mm1").Node("Relu", {"y"}, {"out"}).Output("out");
  if (extra_reader) b.Node("Relu", {"g"}, {"r"}, "relu").Output("r");
  return b;
}

TEST(ActivationSmoothing, FoldsIntoTheMulConstantAndKeepsTheProduct) {
  onnx::ModelProto m = GeluTail(false).Build();
  const float half = TensorToFloats(*Init(m, "half"))[0];
  const std::vector<float> w1 = TensorToFloats(*Init(m, "w1"));
  GraphIndex index(m.graph());
  const Placement plan = PlanPlacement(index, {});
  const auto sites = SitesOf(index, plan, "g");
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_EQ(sites[0].mul, 1);  // folded into the Mul's constant
  std::vector<float> amax(64);
  for (int j = 0; j < 64; ++j) amax[j] = j == 7 ? 40.0f : 0.5f + 0.01f * j;  // one outlier channel
  ASSERT_EQ(SmoothActivations(m.mutable_graph(), index, sites, {{"g", amax}}, 0.8), 1);
  const std::string c = m.graph().node(1).input(1);
  ASSERT_NE(c, "half");
  const std::vector<float> scaled = TensorToFloats(*Init(m, c));
  const std::vector<float> w1s = TensorToFloats(*Init(m, "w1"));
  ASSERT_EQ(scaled.size(), 64u);
  for (int j = 0; j < 64; ++j) {
    float wmax = 0.0f;
    for (int n = 0; n < 32; ++n) wmax = std::max(wmax, std::fabs(w1[j * 32 + n]));
    const double s = std::pow(amax[j], 0.8) / std::pow(wmax, 0.2);
    EXPECT_NEAR(scaled[j], half / s, 1e-6 * std::fabs(half / s)) << j;
    for (int n = 0; n < 32; ++n) {  // (g_j / s_j) * (s_j * W_jn) = g_j * W_jn
      EXPECT_NEAR(scaled[j] * w1s[j * 32 + n], half * w1[j * 32 + n], 1e-6) << j << "," << n;
    }
  }
  // The outlier channel is brought down the most.
  EXPECT_LT(scaled[7] / half, scaled[0] / half);
}

TEST(ActivationSmoothing, InsertsAMulWhenSomethingElseReadsTheTensor) {
  onnx::ModelProto m = GeluTail(true).Build();
  const std::vector<float> w1 = TensorToFloats(*Init(m, "w1"));
  GraphIndex index(m.graph());
  const auto sites = SitesOf(index, PlanPlacement(index, {}), "g");
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_EQ(sites[0].mul, -1);
  EXPECT_EQ(sites[0].matmuls, std::vector<int>{2});
  std::vector<float> amax(64);
  for (int j = 0; j < 64; ++j) amax[j] = j == 3 ? 25.0f : 1.0f;
  int inserted = 0;
  ASSERT_EQ(SmoothActivations(m.mutable_graph(), index, sites, {{"g", amax}}, 0.7, &inserted), 1);
  EXPECT_EQ(inserted, 1);
  // MatMul(w0), Mul(half), the inserted Mul, MatMul(w1), Relu, Relu: the new Mul right before the
  // MatMul it feeds; the other reader keeps g.
  ASSERT_EQ(m.graph().node_size(), 6);
  const onnx::NodeProto& smoothing = m.graph().node(2);
  EXPECT_EQ(smoothing.op_type(), "Mul");
  EXPECT_EQ(smoothing.input(0), "g");
  EXPECT_EQ(m.graph().node(3).input(0), smoothing.output(0));
  EXPECT_EQ(m.graph().node(5).input(0), "g");
  EXPECT_EQ(m.graph().node(1).input(1), "half");  // the GELU constant is not edited
  const std::vector<float> inverse = TensorToFloats(*Init(m, smoothing.input(1)));
  const std::vector<float> w1s = TensorToFloats(*Init(m, "w1"));
  ASSERT_EQ(inverse.size(), 64u);
  for (int j = 0; j < 64; ++j) {
    for (int n = 0; n < 32; ++n) {  // (g_j / s_j) * (s_j * W_jn) = g_j * W_jn
      EXPECT_NEAR(inverse[j] * w1s[j * 32 + n], w1[j * 32 + n], 1e-6) << j << "," << n;
    }
  }
  EXPECT_LT(inverse[3], inverse[0]);  // the outlier channel is divided the most
}

TEST(ActivationSmoothing, NoMulIsInsertedWithoutOutlierChannels) {
  onnx::ModelProto m = GeluTail(true).Build();
  GraphIndex index(m.graph());
  const auto sites = SitesOf(index, PlanPlacement(index, {}), "g");
  std::vector<float> amax(64);
  for (int j = 0; j < 64; ++j) amax[j] = 1.0f + 0.04f * j;  // largest / median = 3.5 / 2.3
  const auto before = m.SerializeAsString();
  int inserted = -1;
  EXPECT_EQ(SmoothActivations(m.mutable_graph(), index, sites, {{"g", amax}}, 0.7, &inserted), 0);
  EXPECT_EQ(inserted, 0);
  EXPECT_EQ(m.SerializeAsString(), before);
}

TEST(ActivationSmoothing, NothingChangesWithoutAMeasurement) {
  onnx::ModelProto n = GeluTail(false).Build();
  GraphIndex nindex(n.graph());
  const auto sites = FindSmoothingSites(nindex, PlanPlacement(nindex, {}));
  ASSERT_EQ(sites.size(), 2u);  // x (a graph input: inserted) and g (folded)
  const auto before = n.SerializeAsString();
  EXPECT_EQ(SmoothActivations(n.mutable_graph(), nindex, sites, {}, 0.8), 0);
  EXPECT_EQ(SmoothActivations(n.mutable_graph(), nindex, sites, {{"g", std::vector<float>(10, 1.0f)}}, 0.8), 0);
  EXPECT_EQ(n.SerializeAsString(), before);
}

TEST(ActivationSmoothing, NoSiteForAMatMulWhoseWeightIsShared) {
  GraphBuilder b;
  b.Input("x", {2, 8, 64}).Weight("w", {64, 64});
  b.Node("MatMul", {"x", "w"}, {"h"}, "mm0").Node("MatMul", {"h", "w"}, {"y"}, "mm1").Output("y");
  onnx::ModelProto m = b.Build();
  GraphIndex index(m.graph());
  EXPECT_TRUE(FindSmoothingSites(index, PlanPlacement(index, {})).empty());
}

}  // namespace
}  // namespace ptqkit
