#include "calib/mse_search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "calib/scale_search.h"
#include "quant/formats/formats.h"

namespace ptqkit::calib {
namespace {

// The grids of the formats table: INT8's 127 uniform steps, FP8 E4M3's own values up to 448.
const Grid kInt8Grid = FindFormat("int8", "--quantize_mode").grid;
const Grid kFp8Grid = FindFormat("fp8", "--quantize_mode").grid;

// The squared error of quantizing every sample with `amax`, computed value by value.
double BruteForceError(const std::vector<float>& v, double amax, const Grid& grid) {
  double e = 0.0;
  for (float x : v) {
    const double d = x - QuantizeDequantize(x, amax, grid);
    e += d * d;
  }
  return e;
}

std::vector<float> Samples(const std::string& kind, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> v(n);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::exponential_distribution<float> expo(1.0f);
  for (float& x : v) {
    if (kind == "uniform") x = uni(rng);
    else if (kind == "gaussian") x = normal(rng);
    else x = (uni(rng) < 0 ? -1.0f : 1.0f) * expo(rng);  // laplacian
  }
  return v;
}

TEST(MseSearchTest, Fp8RoundingHitsRepresentableValues) {
  // amax 448: the grid is E4M3 itself.
  EXPECT_EQ(QuantizeDequantize(448.0, 448.0, kFp8Grid), 448.0);
  EXPECT_EQ(QuantizeDequantize(1000.0, 448.0, kFp8Grid), 448.0);
  EXPECT_EQ(QuantizeDequantize(1.0625, 448.0, kFp8Grid), 1.0);    // between 1 and 1.125
  EXPECT_EQ(QuantizeDequantize(1.1, 448.0, kFp8Grid), 1.125);
  EXPECT_EQ(QuantizeDequantize(-17.0, 448.0, kFp8Grid), -16.0);   // step 2 above 16
  // Subnormals are multiples of 2^-9: 3 * 2^-9 is exact, 1.5 * 2^-9 ties to even (2 * 2^-9).
  EXPECT_EQ(QuantizeDequantize(0.005859375, 448.0, kFp8Grid), 0.005859375);
  EXPECT_EQ(QuantizeDequantize(0.0029296875, 448.0, kFp8Grid), 0.00390625);
  EXPECT_EQ(QuantizeDequantize(0.5, 127.0, kInt8Grid), 0.0);  // ties to even
  EXPECT_EQ(QuantizeDequantize(300.0, 127.0, kInt8Grid), 127.0);
}

class MseDistributionTest : public ::testing::TestWithParam<std::string> {};

TEST_P(MseDistributionTest, LowerErrorThanMaxAndThanABadClip) {
  for (Grid grid : {kInt8Grid, kFp8Grid}) {
    const std::vector<float> v = Samples(GetParam(), 200000, 7);
    TensorStatistics stats("t");
    stats.Add(v.data(), v.size());
    const float mse = ComputeAmax(stats, Method::kMse, 99.999, grid);
    const double e_mse = BruteForceError(v, mse, grid);
    const double e_max = BruteForceError(v, stats.absmax(), grid);
    const double e_clip = BruteForceError(v, 0.1 * stats.absmax(), grid);
    EXPECT_LE(e_mse, e_max) << GetParam() << " grid " << grid.qmax;
    EXPECT_LT(e_mse, e_clip) << GetParam();
    // The histogram estimate tracks the real error.
    const double est = HistogramSquaredError(stats.HistogramWithoutZeros(), stats.bin_width(),
                                             mse, grid);
    EXPECT_NEAR(est / e_mse, 1.0, 0.1) << GetParam();
    if (GetParam() != "uniform" && grid.nearest == nullptr) {
      // Long tails: clipping some of them pays off on the uniform int8 grid.
      EXPECT_LT(mse, stats.absmax()) << GetParam();
      EXPECT_LT(e_mse, 0.9 * e_max) << GetParam();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, MseDistributionTest,
                         ::testing::Values("uniform", "gaussian", "laplacian"));

TEST(MseSearchTest, Fp8UsesItsOwnGrid) {
  // A gaussian bulk and one outlier at 20. On int8's uniform grid keeping the outlier makes the
  // step 5x coarser for 200000 values, which costs more than clipping one value: int8 clips.
  // FP8's relative precision does not depend on the scale, so keeping the outlier costs the bulk
  // nothing there: fp8 keeps the whole range.
  std::vector<float> v = Samples("gaussian", 200000, 11);
  for (float& x : v) x = std::clamp(x, -4.5f, 4.5f);
  v[17] = 20.0f;
  TensorStatistics stats("t");
  stats.Add(v.data(), v.size());
  const float int8 = ComputeAmax(stats, Method::kMse, 99.999, kInt8Grid);
  const float fp8 = ComputeAmax(stats, Method::kMse, 99.999, kFp8Grid);
  EXPECT_LT(int8, 0.5f * stats.absmax());
  EXPECT_GT(fp8, 0.9f * stats.absmax());
  // Each is better on its own grid than the other's choice (brute force on the samples).
  EXPECT_LT(BruteForceError(v, fp8, kFp8Grid), BruteForceError(v, int8, kFp8Grid));
  EXPECT_LT(BruteForceError(v, int8, kInt8Grid), BruteForceError(v, fp8, kInt8Grid));
}

TEST(MseSearchTest, Fp8KeepsTheRangeUnlessClippingCutsTheErrorByTheFloor) {
  // A gaussian: on FP8 the unconstrained optimum clips a little for a small gain. With the floor
  // (what --calibration_method mse uses on FP8) the range stays whole when that gain is under it;
  // a zero floor returns the optimum itself; INT8 (floor 0) still clips.
  const std::vector<float> v = Samples("gaussian", 200000, 5);
  TensorStatistics stats("t");
  stats.Add(v.data(), v.size());
  const float unconstrained = MseAmax(stats, kFp8Grid, 0.0);
  const auto bins = stats.HistogramWithoutZeros();
  const double gain = 1.0 - HistogramSquaredError(bins, stats.bin_width(), unconstrained, kFp8Grid) /
                                HistogramSquaredError(bins, stats.bin_width(), stats.absmax(), kFp8Grid);
  ASSERT_LT(unconstrained, stats.absmax());
  ASSERT_GT(gain, 0.0);
  EXPECT_EQ(MseAmax(stats, kFp8Grid, gain * 0.99), unconstrained);
  EXPECT_EQ(MseAmax(stats, kFp8Grid, gain * 1.01), stats.absmax());
  EXPECT_LT(gain, kMseMinGainNonUniform);  // measured: 0.1% for a clip to 0.94 of the range
  EXPECT_EQ(ComputeAmax(stats, Method::kMse, 99.999, kFp8Grid), stats.absmax());
  EXPECT_LT(ComputeAmax(stats, Method::kMse, 99.999, kInt8Grid), stats.absmax());
}

TEST(MseSearchTest, Fp8StillClipsWhereClippingPaysMoreThanTheFloor) {
  // A uniform bulk in [-1, 1] and 0.05% of the values at 1.3: a range of 1.0 makes every step of the
  // bulk 1.3x finer (error / 1.69) for a small clipping error on the few; that is worth far more
  // than the floor, so FP8 mse still clips.
  std::vector<float> v = Samples("uniform", 200000, 13);
  for (size_t i = 0; i < 100; ++i) v[i * 1000] = 1.3f;
  TensorStatistics stats("t");
  stats.Add(v.data(), v.size());
  const float chosen = ComputeAmax(stats, Method::kMse, 99.999, kFp8Grid);
  EXPECT_LT(chosen, 0.9f * stats.absmax());
  EXPECT_LT(BruteForceError(v, chosen, kFp8Grid),
            (1.0 - kMseMinGainNonUniform) * BruteForceError(v, stats.absmax(), kFp8Grid));
}

TEST(MseSearchTest, ExactZerosDoNotMoveTheAmax) {
  std::vector<float> v = Samples("gaussian", 100000, 3);
  TensorStatistics a("a");
  a.Add(v.data(), v.size());
  std::vector<float> zeros(900000, 0.0f);
  TensorStatistics b = a;
  b.Add(zeros.data(), zeros.size());
  EXPECT_EQ(b.zero_count(), 900000u);
  EXPECT_EQ(ComputeAmax(a, Method::kMse), ComputeAmax(b, Method::kMse));
  EXPECT_EQ(ComputeAmax(a, Method::kEntropy), ComputeAmax(b, Method::kEntropy));
}

// Post-ReLU activations: most values exact zeros, the rest a long tail. The KL search used to
// see the zero spike in bin 0 and take its smallest candidate, 128 bins (~3% of the range).
TEST(EntropyZeroSpikeTest, ZeroHeavyLongTailKeepsTheRange) {
  std::mt19937_64 rng(5);
  std::exponential_distribution<float> expo(1.0f);
  std::vector<float> v(400000, 0.0f);
  for (size_t i = 0; i < v.size(); i += 4) v[i] = expo(rng);  // 75% zeros
  TensorStatistics stats("relu");
  stats.Add(v.data(), v.size());
  // The old search (zeros left in bin 0) collapses: this checks the test data reproduces it.
  const int old_bins = EntropyThresholdBins(stats.histogram());
  EXPECT_EQ(old_bins, 128);
  const float amax = ComputeAmax(stats, Method::kEntropy);
  EXPECT_GT(amax, 0.25f * stats.absmax());
  EXPECT_GT(EntropyThresholdBins(stats), 4 * old_bins);
}

}  // namespace
}  // namespace ptqkit::calib
