#include "calib/mse_search.h"

#include <algorithm>
#include <cmath>

namespace ptqkit::calib {
namespace {

constexpr int kSubSamples = 4;
constexpr int kCandidates = 256;
constexpr double kFp8Max = 448.0;

// Nearest FP8 E4M3 value of y >= 0, saturating at 448.
double RoundFp8E4M3(double y) {
  if (y >= kFp8Max) return kFp8Max;
  if (y <= 0.0) return 0.0;
  int exponent;
  std::frexp(y, &exponent);            // y = f * 2^exponent, f in [0.5, 1)
  const int e = std::max(exponent - 1, -6);  // unbiased exponent; subnormals share 2^-6's step
  const double step = std::ldexp(1.0, e - 3);
  return std::min(std::nearbyint(y / step) * step, kFp8Max);
}

}  // namespace

double QuantizeDequantize(double x, double amax, Grid grid) {
  const double ax = std::fabs(x);
  double q;
  if (amax <= 0.0) {
    q = 0.0;
  } else if (grid == Grid::kInt8) {
    const double step = amax / 127.0;
    q = std::min(std::nearbyint(ax / step), 127.0) * step;
  } else {
    q = RoundFp8E4M3(ax * (kFp8Max / amax)) * (amax / kFp8Max);
  }
  return x < 0.0 ? -q : q;
}

double HistogramSquaredError(const std::vector<uint64_t>& bins, double bin_width, double amax,
                             Grid grid) {
  double total = 0.0;
  for (size_t j = 0; j < bins.size(); ++j) {
    if (bins[j] == 0) continue;
    double err = 0.0;
    for (int k = 0; k < kSubSamples; ++k) {
      const double x = (static_cast<double>(j) + (k + 0.5) / kSubSamples) * bin_width;
      const double d = x - QuantizeDequantize(x, amax, grid);
      err += d * d;
    }
    total += static_cast<double>(bins[j]) * err / kSubSamples;
  }
  return total;
}

float MseAmax(const TensorStatistics& stats, Grid grid) {
  const std::vector<uint64_t> bins = stats.HistogramWithoutZeros();
  const double absmax = stats.absmax();
  const double width = stats.bin_width();
  double best_amax = absmax;
  double best_err = HistogramSquaredError(bins, width, absmax, grid);
  for (int c = kCandidates - 1; c >= 1; --c) {
    const double amax = absmax * c / kCandidates;
    const double err = HistogramSquaredError(bins, width, amax, grid);
    if (err < best_err) {
      best_err = err;
      best_amax = amax;
    }
  }
  return static_cast<float>(best_amax);
}

}  // namespace ptqkit::calib
