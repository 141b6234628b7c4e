// MSE search: the amax that minimises the expected squared quantization error of one tensor,
// estimated from its |x| histogram (exact zeros excluded: they are represented exactly).
//
// For a candidate amax a, every bin contributes count * E[(x - Q_a(x))^2], estimated on
// kSubSamples evenly spaced points inside the bin, where Q_a is:
//   - a uniform grid (INT8): round-to-nearest on the step a/qmax, saturating at a (so values
//     beyond a cost (|x| - a)^2: the clipping error);
//   - a non-uniform grid (FP8 E4M3): x scaled by qmax/a, rounded to the nearest grid value by the
//     grid's `nearest` (for FP8: 3 mantissa bits, subnormals below 2^-6, saturating at 448), scaled back.
// Candidates are 256 evenly spaced thresholds up to the absmax plus the absmax itself; ties go
// to the larger amax. Stateless and thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "calib/method.h"
#include "calib/tensor_statistics.h"

namespace ptqkit::calib {

// REQUIRES: stats has a histogram and absmax() > 0. Returns a value in (0, absmax()].
float MseAmax(const TensorStatistics& stats, const Grid& grid);

// The estimated expected squared error (sum over values, not mean) of quantizing the histogram
// `bins` (bin width `bin_width`) with amax `amax` on `grid`. Exposed for tests.
double HistogramSquaredError(const std::vector<uint64_t>& bins, double bin_width, double amax,
                             const Grid& grid);

// Q_a(x) for one value: the quantize-dequantize of x with amax `amax` on `grid`. Exposed for tests.
double QuantizeDequantize(double x, double amax, const Grid& grid);

}  // namespace ptqkit::calib
