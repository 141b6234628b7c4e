#include "calib/tensor_statistics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "calib/scale_search.h"
#include "ptqkit/error.h"

namespace ptqkit::calib {
namespace {

using ::testing::HasSubstr;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

std::vector<float> Normal(size_t n, float sigma, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Zeros first, then values whose magnitude grows by large factors (subnormals to 1e30), so the
// range is raised many times, by up to hundreds of doublings at once.
std::vector<float> Growing(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(300, 0.0f);
  for (float magnitude : {1e-44f, 1e-38f, 1e-20f, 3e-3f, 1.0f, 7.0f, 1e4f, 1e30f}) {
    for (int i = 0; i < 500; ++i) v.push_back(u(rng) * magnitude);
  }
  v.push_back(-0.0f);
  return v;
}

std::vector<float> WithOutlier(uint64_t seed) {
  std::vector<float> v = Normal(200000, 1.0f, seed);
  v[1234] = -100.0f;
  return v;
}

TensorStatistics Collect(const std::vector<float>& v, size_t batch, bool reversed,
                         bool with_histogram = true) {
  TensorStatistics stats("t", with_histogram);
  const size_t num_batches = (v.size() + batch - 1) / batch;
  for (size_t k = 0; k < num_batches; ++k) {
    const size_t b = reversed ? num_batches - 1 - k : k;
    const size_t begin = b * batch;
    stats.Add(v.data() + begin, std::min(batch, v.size() - begin));
  }
  return stats;
}

// The histogram computed independently, in one go with the final range.
std::vector<uint64_t> ReferenceHistogram(const std::vector<float>& v) {
  float absmax = 0.0f;
  for (float x : v) {
    if (std::isfinite(x)) absmax = std::max(absmax, std::fabs(x));
  }
  std::vector<uint64_t> bins(TensorStatistics::kNumBins, 0);
  if (absmax == 0.0f) {
    for (float x : v) bins[0] += std::isfinite(x);
    return bins;
  }
  int range_log2 = 0;
  while (std::ldexp(1.0L, range_log2) <= absmax) ++range_log2;
  while (std::ldexp(1.0L, range_log2 - 1) > absmax) --range_log2;
  const long double width = std::ldexp(1.0L, range_log2 - TensorStatistics::kLog2NumBins);
  for (float x : v) {
    if (std::isfinite(x)) ++bins[static_cast<size_t>(std::floor(std::fabs(x) / width))];
  }
  return bins;
}

class BatchInvarianceTest : public ::testing::TestWithParam<int> {};

std::vector<float> Distribution(int which) {
  switch (which) {
    case 0:
      return Normal(20000, 1.0f, 7);
    case 1:
      return Growing(11);
    case 2:
      return WithOutlier(3);
    default: {
      std::vector<float> v = Normal(5000, 1e-3f, 5);  // Small range, with rare NaN/Inf.
      v[10] = kNaN;
      v[4000] = -kInf;
      return v;
    }
  }
}

TEST_P(BatchInvarianceTest, SameHistogramAndAmaxForAnyBatchingAndOrder) {
  const std::vector<float> v = Distribution(GetParam());
  const TensorStatistics whole = Collect(v, v.size(), false);
  EXPECT_EQ(whole.histogram(), ReferenceHistogram(v));
  for (size_t batch : {size_t{1}, size_t{7}, size_t{1000}}) {
    for (bool reversed : {false, true}) {
      const TensorStatistics stats = Collect(v, batch, reversed);
      ASSERT_EQ(stats, whole) << "batch " << batch << " reversed " << reversed;
      for (Method m : {Method::kMax, Method::kEntropy, Method::kPercentile, Method::kMse}) {
        EXPECT_EQ(ComputeAmax(stats, m), ComputeAmax(whole, m)) << MethodName(m);
      }
    }
  }
  // Merging partial statistics, in either order, is exact too.
  const size_t half = v.size() / 3;
  TensorStatistics a("t"), b("t");
  a.Add(v.data(), half);
  b.Add(v.data() + half, v.size() - half);
  TensorStatistics ab = a, ba = b;
  ab.Merge(b);
  ba.Merge(a);
  EXPECT_EQ(ab, whole);
  EXPECT_EQ(ba, whole);
}

INSTANTIATE_TEST_SUITE_P(Distributions, BatchInvarianceTest, ::testing::Values(0, 1, 2, 3));

TEST(TensorStatisticsTest, RangeIsSmallestPowerOfTwoAboveAbsmax) {
  TensorStatistics stats("t");
  const float a[] = {0.5f, -1.0f};
  stats.Add(a, 2);
  EXPECT_EQ(stats.absmax(), 1.0f);
  EXPECT_EQ(stats.range_log2(), 1);  // Strictly greater: 1.0 needs R = 2.
  EXPECT_EQ(stats.histogram()[2048], 1u);
  EXPECT_EQ(stats.histogram()[1024], 1u);
  const float b[] = {3.0f};
  stats.Add(b, 1);
  EXPECT_EQ(stats.range_log2(), 2);
  EXPECT_EQ(stats.histogram()[1024], 1u);  // 1.0 at R = 4.
  EXPECT_EQ(stats.histogram()[512], 1u);   // 0.5
  EXPECT_EQ(stats.histogram()[3072], 1u);  // 3.0
  // The largest float still has a bin.
  const float big[] = {std::numeric_limits<float>::max()};
  stats.Add(big, 1);
  EXPECT_EQ(stats.range_log2(), 128);
  EXPECT_EQ(stats.histogram()[4095], 1u);
  EXPECT_EQ(stats.histogram()[0], 3u);
}

TEST(TensorStatisticsTest, AllZerosKeepBinZeroAcrossGrowth) {
  TensorStatistics stats("t");
  const std::vector<float> zeros(10, 0.0f);
  stats.Add(zeros.data(), zeros.size());
  EXPECT_EQ(stats.absmax(), 0.0f);
  EXPECT_EQ(stats.finite_count(), 10u);
  EXPECT_EQ(stats.histogram()[0], 10u);
  EXPECT_EQ(ComputeAmax(stats, Method::kEntropy), 0.0f);
  EXPECT_EQ(ComputeAmax(stats, Method::kPercentile), 0.0f);
  const float one = 1.5f;
  stats.Add(&one, 1);
  EXPECT_EQ(stats.histogram()[0], 10u);
  EXPECT_EQ(stats.histogram()[3072], 1u);
}

TEST(TensorStatisticsTest, SkipsAndCountsNonFinite) {
  const float v[] = {1.0f, kNaN, -kInf, 2.0f, kInf, -kNaN, -4.0f};
  for (bool with_histogram : {true, false}) {
    TensorStatistics stats("t", with_histogram);
    stats.Add(v, 7);
    EXPECT_EQ(stats.absmax(), 4.0f);
    EXPECT_EQ(stats.finite_count(), 3u);
    EXPECT_EQ(stats.nan_count(), 2u);
    EXPECT_EQ(stats.inf_count(), 2u);
    EXPECT_EQ(stats.nonfinite_count(), 4u);
    EXPECT_EQ(ComputeAmax(stats, Method::kMax), 4.0f);
    if (with_histogram) {
      uint64_t total = 0;
      for (uint64_t c : stats.histogram()) total += c;
      EXPECT_EQ(total, 3u);
    } else {
      EXPECT_TRUE(stats.histogram().empty());
    }
  }
}

TEST(TensorStatisticsTest, WithoutHistogramTracksMaxOnly) {
  const std::vector<float> v = Growing(2);
  const TensorStatistics a = Collect(v, 1, false, false);
  const TensorStatistics b = Collect(v, 33, true, false);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.absmax(), Collect(v, v.size(), false).absmax());
  EXPECT_THROW(ComputeAmax(a, Method::kEntropy), Error);
  EXPECT_THROW(ComputeAmax(a, Method::kPercentile), Error);
  TensorStatistics h("h", true);
  EXPECT_THROW(h.Merge(a), Error);
}

TEST(TensorStatisticsTest, JsonRoundTripIsExact) {
  for (int which : {0, 1, 2, 3}) {
    const std::vector<float> v = Distribution(which);
    for (bool with_histogram : {true, false}) {
      const TensorStatistics stats = Collect(v, 100, false, with_histogram);
      const std::string text = stats.ToJson().dump();
      const TensorStatistics back = TensorStatistics::FromJson(nlohmann::json::parse(text), "t");
      EXPECT_EQ(back, stats);
      for (Method m : {Method::kMax, Method::kEntropy, Method::kPercentile, Method::kMse}) {
        if (!with_histogram && m != Method::kMax) continue;
        EXPECT_EQ(ComputeAmax(back, m), ComputeAmax(stats, m));
      }
    }
  }
  const TensorStatistics empty("e");
  EXPECT_EQ(TensorStatistics::FromJson(empty.ToJson(), "e"), empty);
}

TEST(TensorStatisticsTest, FromJsonRejectsInconsistentEntries) {
  const float v[] = {1.0f, 2.5f, -0.25f};
  TensorStatistics stats("t");
  stats.Add(v, 3);
  const nlohmann::json good = stats.ToJson();

  nlohmann::json bad = good;
  bad["finite_count"] = 4;
  EXPECT_THROW(
      {
        try {
          TensorStatistics::FromJson(bad, "conv1_out");
        } catch (const Error& e) {
          EXPECT_THAT(e.what(), HasSubstr("conv1_out"));
          EXPECT_THAT(e.what(), HasSubstr("add up to 3"));
          throw;
        }
      },
      Error);
  bad = good;
  bad["amax"] = 7.0;  // Range no longer fits.
  EXPECT_THROW(TensorStatistics::FromJson(bad, "t"), Error);
  bad = good;
  bad["amax"] = -1.0;
  EXPECT_THROW(TensorStatistics::FromJson(bad, "t"), Error);
  bad = good;
  bad["histogram"]["num_bins"] = 2048;
  EXPECT_THROW(TensorStatistics::FromJson(bad, "t"), Error);
  bad = good;
  bad["histogram"]["runs"] = nlohmann::json::array({nlohmann::json::array({4095, 1, 2})});
  EXPECT_THROW(TensorStatistics::FromJson(bad, "t"), Error);
  bad = good;
  bad.erase("nan_count");
  EXPECT_THROW(TensorStatistics::FromJson(bad, "t"), Error);
  EXPECT_THROW(TensorStatistics::FromJson(nlohmann::json::array(), "t"), Error);
}

}  // namespace
}  // namespace ptqkit::calib
