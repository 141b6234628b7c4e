#include "accuracy/tensor_error.h"

#include <algorithm>
#include <cmath>

#include "calib/mse_search.h"

namespace ptqkit::accuracy {

std::vector<TensorClipping> LargestQuantizationErrors(const calib::CalibrationTable& table,
                                                      const std::map<std::string, float>& amax, calib::Grid grid,
                                                      size_t top) {
  std::vector<TensorClipping> all;
  for (const auto& [name, a] : amax) {
    auto it = table.tensors.find(name);
    if (it == table.tensors.end() || !it->second.with_histogram() || it->second.absmax() <= 0 || a <= 0) continue;
    const calib::TensorStatistics& stats = it->second;
    const std::vector<uint64_t> bins = stats.HistogramWithoutZeros();
    const double w = stats.bin_width();
    // Per nonzero value, |x - QDQ(x)| / |x| at the bin's midpoint: 1 for values that round to 0
    // (lost resolution: a few large values set a scale that flattens the rest), the clipped
    // share for values beyond the amax, small elsewhere.
    double relative = 0.0, beyond = 0.0, nonzero = 0.0;
    for (size_t i = 0; i < bins.size(); ++i) {
      if (bins[i] == 0) continue;
      const double mid = (static_cast<double>(i) + 0.5) * w;
      const double count = static_cast<double>(bins[i]);
      relative += count * std::abs(mid - calib::QuantizeDequantize(mid, a, grid)) / mid;
      nonzero += count;
      if (static_cast<double>(i) * w >= a) beyond += count;
    }
    if (nonzero <= 0) continue;
    TensorClipping c;
    c.tensor = name;
    c.relative_error = relative / nonzero;
    c.clipped_fraction = stats.finite_count() > 0 ? beyond / static_cast<double>(stats.finite_count()) : 0.0;
    c.amax = a;
    c.absmax = stats.absmax();
    all.push_back(c);
  }
  std::sort(all.begin(), all.end(), [](const TensorClipping& x, const TensorClipping& y) {
    return x.relative_error != y.relative_error ? x.relative_error > y.relative_error : x.tensor < y.tensor;
  });
  if (all.size() > top) all.resize(top);
  return all;
}

}  // namespace ptqkit::accuracy
