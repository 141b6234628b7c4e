#include "sensitivity/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "ptqkit/error.h"

namespace ptqkit::sensitivity {
namespace {

using ::testing::HasSubstr;

double Compare(Metric m, const std::vector<float>& ref, const std::vector<float>& probe) {
  return CompareSample(m, ref.data(), probe.data(), ref.size());
}

TEST(MetricsTest, KlDivergenceMatchesHandComputedValue) {
  // softmax([0, 0]) = (1/2, 1/2); softmax([ln 3, 0]) = (3/4, 1/4).
  // KL = 1/2 ln((1/2)/(3/4)) + 1/2 ln((1/2)/(1/4)) = 1/2 ln(4/3).
  const double expected = 0.5 * std::log(4.0 / 3.0);
  EXPECT_NEAR(Compare(Metric::kKlDiv, {0.0f, 0.0f}, {static_cast<float>(std::log(3.0)), 0.0f}),
              expected, 1e-7);
}

TEST(MetricsTest, KlDivergenceIsAsymmetricInTheRightDirection) {
  // KL(P || Q) with P = softmax(ref): swapping gives 3/4 ln(3/2) + 1/4 ln(1/2).
  const float ln3 = static_cast<float>(std::log(3.0));
  const double swapped = 0.75 * std::log(1.5) + 0.25 * std::log(0.5);
  EXPECT_NEAR(Compare(Metric::kKlDiv, {ln3, 0.0f}, {0.0f, 0.0f}), swapped, 1e-7);
  EXPECT_GT(std::abs(swapped - 0.5 * std::log(4.0 / 3.0)), 1e-3);
}

TEST(MetricsTest, KlDivergenceOfIdenticalOutputsIsZero) {
  EXPECT_EQ(Compare(Metric::kKlDiv, {1.0f, -2.0f, 3.5f, 0.25f}, {1.0f, -2.0f, 3.5f, 0.25f}), 0.0);
}

TEST(MetricsTest, KlDivergenceIgnoresAConstantShiftOfTheLogits) {
  EXPECT_NEAR(Compare(Metric::kKlDiv, {1.0f, 2.0f, 3.0f}, {11.0f, 12.0f, 13.0f}), 0.0, 1e-12);
}

TEST(MetricsTest, KlDivergenceDoesNotOverflowOnLargeLogits) {
  // P ~ (1, e^-1000), Q ~ (e^-1000, 1): KL = 1 * (0 - (-1000)) = 1000 exactly in float64.
  EXPECT_DOUBLE_EQ(Compare(Metric::kKlDiv, {1000.0f, 0.0f}, {0.0f, 1000.0f}), 1000.0);
}

// Probabilities already (every value in [0, 1]): KL of the values normalised to sum 1, no softmax.
TEST(MetricsTest, KlDivergenceOfProbabilitiesComparesThemDirectly) {
  // Two rows of two classes: mean of the rows' KL. Row 1: (0.9, 0.1) vs (0.6, 0.4); row 2 equal.
  const double row1 = 0.9 * std::log(0.9 / 0.6) + 0.1 * std::log(0.1 / 0.4);
  EXPECT_NEAR(Compare(Metric::kKlDiv, {0.9f, 0.1f, 0.5f, 0.5f}, {0.6f, 0.4f, 0.5f, 0.5f}), row1 / 2.0, 1e-6);
}

TEST(MetricsTest, KlDivergenceOfProbabilitiesSeesAFlipThatSoftmaxHides) {
  // 400 rows of 100 classes, one row's winner moves: a softmax over the 40000 values in [0, 1] is
  // nearly uniform and would hide it; the direct form gives that row's divergence / 400.
  std::vector<float> ref(400 * 100, 0.0f), probe;
  for (int r = 0; r < 400; ++r) ref[r * 100] = 1.0f;
  probe = ref;
  probe[0] = 0.3f;
  probe[1] = 0.7f;
  const double kl = Compare(Metric::kKlDiv, ref, probe);
  EXPECT_GT(kl, std::log(1.0 / 0.3) / 400.0 * 0.99);
  EXPECT_LT(kl, std::log(1.0 / 0.3) / 400.0 * 1.01);
  EXPECT_EQ(Compare(Metric::kKlDiv, ref, ref), 0.0);
}

TEST(MetricsTest, KlDivergenceOfProbabilitiesStaysFiniteWhereTheProbeIsZeroOrNegative) {
  const double kl = Compare(Metric::kKlDiv, {0.5f, 0.5f}, {1.0f, -0.01f});
  EXPECT_TRUE(std::isfinite(kl));
  EXPECT_GT(kl, 1.0);  // 0.5 log(0.5 / 1e-12): large, not infinite
}

TEST(MetricsTest, MseIsTheMeanSquaredDifference) {
  EXPECT_DOUBLE_EQ(Compare(Metric::kMse, {1.0f, 2.0f, 3.0f}, {1.0f, 0.0f, 6.0f}), 13.0 / 3.0);
  EXPECT_EQ(Compare(Metric::kMse, {1.5f, -2.0f}, {1.5f, -2.0f}), 0.0);
}

TEST(MetricsTest, CosineDistanceMatchesHandComputedValues) {
  EXPECT_NEAR(Compare(Metric::kCos, {3.0f, 4.0f}, {4.0f, 3.0f}), 1.0 - 24.0 / 25.0, 1e-12);
  EXPECT_NEAR(Compare(Metric::kCos, {1.0f, 0.0f}, {0.0f, 1.0f}), 1.0, 1e-12);
  EXPECT_NEAR(Compare(Metric::kCos, {1.0f, 0.0f}, {-2.0f, 0.0f}), 2.0, 1e-12);
  EXPECT_NEAR(Compare(Metric::kCos, {1.0f, 2.0f}, {2.0f, 4.0f}), 0.0, 1e-12);
}

TEST(MetricsTest, CosineDistanceWithZeroVectors) {
  EXPECT_EQ(Compare(Metric::kCos, {0.0f, 0.0f}, {1.0f, 2.0f}), 1.0);
  EXPECT_EQ(Compare(Metric::kCos, {1.0f, 2.0f}, {0.0f, 0.0f}), 1.0);
  EXPECT_EQ(Compare(Metric::kCos, {0.0f, 0.0f}, {0.0f, 0.0f}), 0.0);
}

TEST(MetricsTest, EmptyOutputsCompareAsZero) {
  for (Metric m : {Metric::kKlDiv, Metric::kMse, Metric::kCos}) {
    EXPECT_EQ(CompareSample(m, nullptr, nullptr, 0), 0.0) << MetricName(m);
  }
}

TEST(MetricsTest, NonFiniteProbeGivesNonFiniteScore) {
  const float nan = std::nanf("");
  EXPECT_FALSE(std::isfinite(Compare(Metric::kMse, {1.0f, 2.0f}, {nan, 2.0f})));
  EXPECT_FALSE(std::isfinite(Compare(Metric::kKlDiv, {1.0f, 2.0f}, {nan, 2.0f})));
  EXPECT_FALSE(std::isfinite(Compare(Metric::kCos, {1.0f, 2.0f}, {nan, 2.0f})));
}

TEST(MetricsTest, ParseAndNameRoundTrip) {
  for (Metric m : {Metric::kKlDiv, Metric::kMse, Metric::kCos}) {
    EXPECT_EQ(ParseMetric(MetricName(m)), m);
  }
  EXPECT_EQ(MetricName(Metric::kKlDiv), "kl_div");
  EXPECT_EQ(MetricName(Metric::kMse), "mse");
  EXPECT_EQ(MetricName(Metric::kCos), "cos");
}

TEST(MetricsTest, UnknownMetricListsTheValidNames) {
  try {
    ParseMetric("kl");
    FAIL() << "expected ptqkit::Error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("'kl'"));
    EXPECT_THAT(e.what(), HasSubstr("kl_div, mse, cos"));
  }
}

TEST(ScoreAccumulatorTest, MeanOverSamplesSummedOverOutputs) {
  ScoreAccumulator acc(Metric::kMse, 2);
  acc.AddValue(0, 0, 1.0);
  acc.AddValue(0, 1, 3.0);
  acc.AddValue(1, 0, 10.0);
  EXPECT_DOUBLE_EQ(acc.Score(), (1.0 + 3.0) / 2 + 10.0);
  EXPECT_EQ(acc.NumSamples(0), 2);
  EXPECT_EQ(acc.NumSamples(1), 1);
}

TEST(ScoreAccumulatorTest, ComparesSamplesWithItsMetric) {
  ScoreAccumulator acc(Metric::kMse, 1);
  const std::vector<float> ref = {1.0f, 2.0f}, probe_a = {1.0f, 4.0f}, probe_b = {0.0f, 2.0f};
  acc.Add(0, 0, ref.data(), probe_a.data(), 2);  // mse 2
  acc.Add(0, 1, ref.data(), probe_b.data(), 2);  // mse 0.5
  EXPECT_DOUBLE_EQ(acc.Score(), 1.25);
}

TEST(ScoreAccumulatorTest, OrderOfArrivalDoesNotChangeTheScore) {
  const std::vector<double> values = {0.1, 1e-17, 0.7, 1e17, -1e17, 0.3};
  ScoreAccumulator in_order(Metric::kKlDiv, 1), reversed(Metric::kKlDiv, 1);
  for (size_t i = 0; i < values.size(); ++i)
    in_order.AddValue(0, static_cast<int64_t>(i), values[i]);
  for (size_t i = values.size(); i-- > 0;) reversed.AddValue(0, static_cast<int64_t>(i), values[i]);
  EXPECT_EQ(in_order.Score(), reversed.Score());
}

TEST(ScoreAccumulatorTest, RejectsDuplicatesAndBadIndices) {
  ScoreAccumulator acc(Metric::kCos, 1);
  acc.AddValue(0, 3, 1.0);
  EXPECT_THROW(acc.AddValue(0, 3, 1.0), Error);
  EXPECT_THROW(acc.AddValue(1, 0, 1.0), Error);
  EXPECT_THROW(acc.AddValue(0, -1, 1.0), Error);
  // A gap (samples 0..2 missing) is not counted as zeros.
  EXPECT_DOUBLE_EQ(acc.Score(), 1.0);
}

TEST(ScoreAccumulatorTest, EmptyAccumulatorScoresZero) {
  EXPECT_EQ(ScoreAccumulator(Metric::kKlDiv, 3).Score(), 0.0);
}

}  // namespace
}  // namespace ptqkit::sensitivity
