#include "calib/scale_search.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "calib/mse_search.h"
#include "ptqkit/error.h"

namespace ptqkit::calib {
namespace {

constexpr int kQuantizedLevels = 128;
// Count given to a Q bin that is empty where P is not (see EntropyThresholdBins); the epsilon
// MXNet's TensorRT-style calibrator smooths counts with.
constexpr double kSmoothingCount = 1e-4;

inline double XLogX(double x) { return x > 0.0 ? x * std::log(x) : 0.0; }

void RequireFinite(const TensorStatistics& stats, Method method) {
  if (stats.finite_count() == 0) {
    throw Error(fmt::format(
        "cannot calibrate tensor '{}' ({}): no finite values were seen ({} NaN, {} Inf)",
        stats.name(), MethodName(method), stats.nan_count(), stats.inf_count()));
  }
}

void RequireHistogram(const TensorStatistics& stats, Method method) {
  if (!stats.with_histogram()) {
    throw Error(fmt::format(
        "cannot calibrate tensor '{}' with method {}: its statistics were collected without a "
        "histogram",
        stats.name(), MethodName(method)));
  }
}

float PercentileAmax(const TensorStatistics& stats, double percentile) {
  if (!(percentile > 0.0 && percentile <= 100.0)) {
    throw Error(fmt::format("calibration percentile must be in (0, 100], got {} (tensor '{}')",
                            percentile, stats.name()));
  }
  if (stats.absmax() == 0.0f) return 0.0f;
  const std::vector<uint64_t>& bins = stats.histogram();
  const double target = percentile / 100.0 * static_cast<double>(stats.finite_count());
  uint64_t cumulative = 0;
  size_t i = 0;
  for (; i < bins.size(); ++i) {
    cumulative += bins[i];
    if (static_cast<double>(cumulative) >= target) break;
  }
  const double edge = static_cast<double>(i + 1) * stats.bin_width();
  return static_cast<float>(std::min(edge, static_cast<double>(stats.absmax())));
}

}  // namespace

// The KL search, as in TensorRT's description, over thresholds at bin edges i = 128 .. n (n = last
// non-empty bin + 1), with T = total count:
//   P_i: bins 0 .. i-1 of the histogram, with all mass beyond the threshold (bins >= i) added to
//        bin i-1 (clipped values saturate to the threshold).
//   Q_i: P_i's i bins split into 128 groups (bin j in group floor(j * 128 / i), so groups differ
//        in size by at most one bin), each group's mass spread evenly over the group's non-zero
//        bins of P_i; bins where P_i is zero stay zero in Q_i. This is the distribution the 128
//        int8 levels can represent.
// Both sum to T, so they are normalised by the same T. Q_i is zero exactly where P_i is, so
// KL(P_i || Q_i) is finite without any smoothing: zero bins add nothing to the sum. Per group g
// with mass M_g on nz_g non-zero bins,
//   T * KL(P_i || Q_i) = sum_j c_j log c_j  -  sum_g M_g log(M_g / nz_g),
// (c_j: counts of P_i), which prefix sums of counts, non-zero bins and c log c give in
// O(128) per candidate: O(n * 128) in all, about 0.5 M logs for n = 4096.
// Ties go to the smaller threshold. Candidates use double arithmetic in a fixed order, so equal
// histograms always give the same i.
int EntropyThresholdBins(const TensorStatistics& stats) {
  return EntropyThresholdBins(stats.HistogramWithoutZeros());
}

int EntropyThresholdBins(const std::vector<uint64_t>& bins) {
  int n = static_cast<int>(bins.size());
  while (n > 0 && bins[n - 1] == 0) --n;
  if (n == 0) return static_cast<int>(bins.size());  // Only zeros: nothing to clip.
  if (n <= kQuantizedLevels) return n;

  // Prefix sums over bins [0, j): counts, non-zero bins, sum of c log c.
  std::vector<double> count_prefix(n + 1, 0.0);
  std::vector<int> nonzero_prefix(n + 1, 0);
  std::vector<double> xlogx_prefix(n + 1, 0.0);
  for (int j = 0; j < n; ++j) {
    const double c = static_cast<double>(bins[j]);
    count_prefix[j + 1] = count_prefix[j] + c;
    nonzero_prefix[j + 1] = nonzero_prefix[j] + (bins[j] != 0);
    xlogx_prefix[j + 1] = xlogx_prefix[j] + XLogX(c);
  }
  const double total = count_prefix[n];
  std::vector<double> log_table(n + 1, 0.0);  // log(k) for group sizes k <= n.
  for (int k = 1; k <= n; ++k) log_table[k] = std::log(static_cast<double>(k));
  const double total_log_total = XLogX(total);

  int best_i = n;
  double best_kl = std::numeric_limits<double>::infinity();
  for (int i = kQuantizedLevels; i <= n; ++i) {
    // P_i's last bin carries itself and the clipped mass: T - C[i-1] > 0, as bin n-1 >= i-1 is
    // non-empty. Q_i holds the C[i] values below the threshold.
    const double last = total - count_prefix[i - 1];
    const double kept = count_prefix[i];
    double kl = xlogx_prefix[i - 1] + XLogX(last) - total_log_total + total * std::log(kept);
    for (int g = 0; g < kQuantizedLevels; ++g) {
      const int begin = (g * i + kQuantizedLevels - 1) / kQuantizedLevels;
      const int end = ((g + 1) * i + kQuantizedLevels - 1) / kQuantizedLevels;
      const double q_mass = count_prefix[end] - count_prefix[begin];
      if (g + 1 < kQuantizedLevels) {
        const int nonzero = nonzero_prefix[end] - nonzero_prefix[begin];
        if (nonzero > 0) kl -= q_mass * (std::log(q_mass) - log_table[nonzero]);
      } else {  // end == i: the group holding P_i's last bin, which is never zero.
        const double p_mass = total - count_prefix[begin];
        if (q_mass == 0.0) {
          // Only clipped mass here: P_i's single non-zero bin i-1 faces an empty Q_i bin.
          // Smooth that bin to kSmoothingCount and renormalise Q_i by kept + kSmoothingCount.
          kl += total * (std::log1p(kSmoothingCount / kept)) - p_mass * std::log(kSmoothingCount);
        } else {
          const int nonzero = nonzero_prefix[i - 1] - nonzero_prefix[begin] + 1;
          kl -= p_mass * (std::log(q_mass) - log_table[nonzero]);
        }
      }
    }
    if (kl < best_kl) {
      best_kl = kl;
      best_i = i;
    }
  }
  return best_i;
}

float ComputeAmax(const TensorStatistics& stats, Method method, double percentile, const Grid& grid) {
  RequireFinite(stats, method);
  switch (method) {
    case Method::kMax:
      return stats.absmax();
    case Method::kPercentile:
      RequireHistogram(stats, method);
      return PercentileAmax(stats, percentile);
    case Method::kMse:
      RequireHistogram(stats, method);
      if (stats.absmax() == 0.0f) return 0.0f;
      return MseAmax(stats, grid, grid.nearest != nullptr ? kMseMinGainNonUniform : 0.0);
    case Method::kEntropy: {
      RequireHistogram(stats, method);
      if (stats.absmax() == 0.0f) return 0.0f;
      const int i = EntropyThresholdBins(stats);
      // The threshold is a bin edge; the last candidate's edge (and, with too few bins to
      // search, the returned n) lies above the absmax, so clamp.
      const double threshold = static_cast<double>(i) * stats.bin_width();
      const float kl = static_cast<float>(std::min(threshold, static_cast<double>(stats.absmax())));
      // KL on long-tailed histograms still clips far below what the rest of the range needs
      // (OCR recognizer: 0 exact lines with KL alone). Never clip harder than the range with the
      // least squared error on the same histogram.
      return std::max(kl, MseAmax(stats, grid));
    }
  }
  return stats.absmax();
}

}  // namespace ptqkit::calib
