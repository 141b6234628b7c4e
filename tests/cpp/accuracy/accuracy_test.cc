// SearchCut (the accuracy-budget search over a ranking) and the output comparison of the loss
// report, on hand-made divergence curves and tensors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <vector>

#include "accuracy/accuracy_budget.h"
#include "accuracy/output_agreement.h"
#include "accuracy/padding_mask_input.h"

namespace ptqkit::accuracy {
namespace {

// A curve d(k) given as a table; counts the evaluations.
struct Curve {
  std::map<int64_t, double> values;
  int calls = 0;
  double operator()(int64_t k) {
    ++calls;
    return values.at(k);
  }
};

TEST(SearchCut, AlreadyMetEvaluatesNothing) {
  Curve c;
  const AccuracyBudgetReport r = SearchCut(10, 0.1, 0.05, std::ref(c));
  EXPECT_TRUE(r.met);
  EXPECT_EQ(c.calls, 0);
  EXPECT_TRUE(r.excluded_nodes.empty());
  ASSERT_EQ(r.curve.size(), 1u);
}

TEST(SearchCut, FindsTheSmallestMeetingCutOnAMonotoneCurve) {
  Curve c;
  for (int64_t k = 0; k <= 20; ++k) c.values[k] = k >= 13 ? 0.01 : 1.0 - 0.05 * static_cast<double>(k);
  const AccuracyBudgetReport r = SearchCut(20, 0.02, 1.0, std::ref(c));
  EXPECT_TRUE(r.met);
  EXPECT_EQ(r.excluded_nodes.size(), 13u);
  // Galloping 1, 2, 4, 8, 16, then bisection in (8, 16]: 12, 14, 13.
  EXPECT_EQ(c.calls, 8);
  EXPECT_EQ(r.evaluations, 8);
  std::vector<int64_t> ks;
  for (const auto& [k, d] : r.curve) ks.push_back(k);
  EXPECT_EQ(ks, (std::vector<int64_t>{0, 1, 2, 4, 8, 16, 12, 14, 13}));
}

TEST(SearchCut, TheAnswerWasAlwaysMeasuredToMeetTheBudget) {
  // Not monotone: 16 meets, 12 misses, 14 meets, 13 misses: the answer is 14, never a guess.
  Curve c;
  for (int64_t k = 0; k <= 16; ++k) c.values[k] = 1.0;
  c.values[14] = c.values[15] = c.values[16] = 0.0;
  c.values[10] = 0.0;  // never visited: bisection trusts the bracket it measured
  const AccuracyBudgetReport r = SearchCut(16, 0.5, 1.0, std::ref(c));
  EXPECT_TRUE(r.met);
  EXPECT_EQ(r.excluded_nodes.size(), 14u);
  bool measured = false;
  for (const auto& [k, d] : r.curve) measured |= (k == 14 && d <= 0.5);
  EXPECT_TRUE(measured);
}

TEST(SearchCut, UnmetKeepsTheWholeRanking) {
  Curve c;
  for (int64_t k = 0; k <= 5; ++k) c.values[k] = 1.0;
  const AccuracyBudgetReport r = SearchCut(5, 0.1, 1.0, std::ref(c));
  EXPECT_FALSE(r.met);
  EXPECT_EQ(r.excluded_nodes.size(), 5u);
  EXPECT_EQ(r.curve.back().first, 5);  // 1, 2, 4, then the whole ranking
  EXPECT_EQ(c.calls, 4);
}

HostTensor Floats(std::vector<int64_t> shape, const std::vector<float>& values) {
  HostTensor t(DataType::kFloat, std::move(shape));
  std::memcpy(t.bytes.data(), values.data(), values.size() * sizeof(float));
  return t;
}

TEST(CompareOutputs, PerSampleCosineTop1AndRelativeError) {
  BatchOutputs ref, q;
  ref.rows = q.rows = {2};
  ref.values = {{Floats({2, 3}, {1, 0, 0, 0, 2, 0})}};
  q.values = {{Floats({2, 3}, {1, 0, 0, 0, 0, 3})}};  // sample 0 equal; sample 1 orthogonal
  const std::vector<OutputLoss> l = CompareOutputs({"y"}, ref, q);
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0].samples, 2);
  EXPECT_NEAR(l[0].cosine_mean, 0.5, 1e-12);
  EXPECT_NEAR(l[0].cosine_min, 0.0, 1e-12);
  ASSERT_TRUE(l[0].top1_agreement.has_value());
  EXPECT_NEAR(*l[0].top1_agreement, 0.5, 1e-12);
  EXPECT_NEAR(l[0].relative_rmse, std::sqrt(13.0 / 5.0), 1e-9);
  EXPECT_NEAR(l[0].max_abs_diff, 3.0, 1e-12);
  EXPECT_NEAR(Divergence(BudgetMetric::kTop1, ref, q), 0.5, 1e-12);
  EXPECT_NEAR(Divergence(BudgetMetric::kCos, ref, q), 0.5, 1e-9);
}

TEST(CompareOutputs, AnOutputWithoutABatchAxisIsOneSample) {
  BatchOutputs ref, q;
  ref.rows = q.rows = {3};  // 3 samples in the batch, but the state is [2, 1, 2]: one sample
  ref.values = {{Floats({2, 1, 2}, {1, 1, 1, 1})}};
  q.values = {{Floats({2, 1, 2}, {1, 1, 1, std::nanf("")})}};
  const std::vector<OutputLoss> l = CompareOutputs({"state"}, ref, q);
  EXPECT_EQ(l[0].samples, 1);
  EXPECT_EQ(l[0].non_finite, 1);
  EXPECT_TRUE(std::isinf(Divergence(BudgetMetric::kTop1, ref, q)));
}

TEST(CompareOutputs, ShapeMismatchIsAnError) {
  BatchOutputs ref, q;
  ref.rows = q.rows = {1};
  ref.values = {{Floats({1, 2}, {1, 2})}};
  q.values = {{Floats({1, 3}, {1, 2, 3})}};
  EXPECT_THROW(CompareOutputs({"y"}, ref, q), std::exception);
}

// A graph with one input `name` of `type` and `rank`.
onnx::GraphProto GraphWithInput(const std::string& name, int32_t type, int rank) {
  onnx::GraphProto g;
  auto* t = g.add_input()->mutable_type()->mutable_tensor_type();
  g.mutable_input(0)->set_name(name);
  t->set_elem_type(type);
  for (int i = 0; i < rank; ++i) t->mutable_shape()->add_dim()->set_dim_param("d" + std::to_string(i));
  return g;
}

TEST(PaddingMaskInput, AnAttentionMaskInputIsTheDefault) {
  const onnx::GraphProto g = GraphWithInput("attention_mask", onnx::TensorProto::INT64, 2);
  EXPECT_EQ(PaddingMaskInput(g, ""), "attention_mask");
  EXPECT_EQ(PaddingMaskInput(g, "none"), "");
  EXPECT_EQ(PaddingMaskInput(g, "other_mask"), "other_mask");
}

TEST(PaddingMaskInput, NoDefaultForAnotherNameTypeOrRank) {
  EXPECT_EQ(PaddingMaskInput(GraphWithInput("mask", onnx::TensorProto::INT64, 2), ""), "");
  EXPECT_EQ(PaddingMaskInput(GraphWithInput("attention_mask", onnx::TensorProto::FLOAT, 2), ""), "");
  EXPECT_EQ(PaddingMaskInput(GraphWithInput("attention_mask", onnx::TensorProto::INT64, 4), ""), "");
  EXPECT_EQ(PaddingMaskInput(GraphWithInput("attention_mask", onnx::TensorProto::BOOL, 2), ""), "attention_mask");
}

}  // namespace
}  // namespace ptqkit::accuracy
