#include "calib/mse_search.h"

#include <algorithm>
#include <cmath>

namespace ptqkit::calib {
namespace {

constexpr int kSubSamples = 4;
constexpr int kCandidates = 256;

}  // namespace

double QuantizeDequantize(double x, double amax, const Grid& grid) {
  const double ax = std::fabs(x);
  double q;
  if (amax <= 0.0) {
    q = 0.0;
  } else if (grid.nearest == nullptr) {
    const double step = amax / grid.qmax;
    q = std::min(std::nearbyint(ax / step), grid.qmax) * step;
  } else {
    q = grid.nearest(ax * (grid.qmax / amax)) * (amax / grid.qmax);
  }
  return x < 0.0 ? -q : q;
}

double HistogramSquaredError(const std::vector<uint64_t>& bins, double bin_width, double amax,
                             const Grid& grid) {
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

float MseAmax(const TensorStatistics& stats, const Grid& grid, double min_gain) {
  const std::vector<uint64_t> bins = stats.HistogramWithoutZeros();
  const double absmax = stats.absmax();
  const double width = stats.bin_width();
  const double at_absmax = HistogramSquaredError(bins, width, absmax, grid);
  double best_amax = absmax;
  double best_err = at_absmax;
  for (int c = kCandidates - 1; c >= 1; --c) {
    const double amax = absmax * c / kCandidates;
    const double err = HistogramSquaredError(bins, width, amax, grid);
    if (err < best_err) {
      best_err = err;
      best_amax = amax;
    }
  }
  if (best_err > (1.0 - min_gain) * at_absmax) return static_cast<float>(absmax);
  return static_cast<float>(best_amax);
}

}  // namespace ptqkit::calib
