// Scale search: turns one tensor's TensorStatistics into the amax (the |x| that maps to the
// largest quantized value) for a calibration Method.
//
//  - kMax:        the absolute maximum.
//  - kPercentile: the upper edge of the first histogram bin at which the cumulative count
//                 reaches `percentile` % of the finite values, clamped to the absmax.
//  - kMse:        see mse_search.h.
//  - kEntropy:    TensorRT's KL-divergence search (Migacz, "8-bit Inference with TensorRT",
//                 GTC 2017) with 128 quantized levels over the |x| histogram; details in
//                 scale_search.cc. Clipping a far outlier costs little KL, so entropy gives a
//                 smaller amax than max on data with long tails.
// The result depends only on the statistics, which do not depend on batch size or order, so
// neither does the amax. Stateless and thread-safe.
#pragma once

#include "calib/method.h"
#include "calib/tensor_statistics.h"

namespace ptqkit::calib {

// REQUIRES: stats saw at least one finite value; a histogram for kEntropy and kPercentile;
// 0 < percentile <= 100 for kPercentile. Throws ptqkit::Error naming stats.name() otherwise.
// Returns a value in [0, stats.absmax()]; 0 only when every finite value was 0.
// `grid` is the quantization grid the amax is for; kMse uses it (see mse_search.h).
float ComputeAmax(const TensorStatistics& stats, Method method, double percentile = 99.999,
                  const Grid& grid = Grid{});

// The KL search alone: returns the number of bins i (the threshold is i * bin width) that
// minimises KL(P_i || Q_i). Exposed for tests and diagnostics. REQUIRES: as ComputeAmax for
// kEntropy, and absmax() > 0.
// The search runs on the histogram without its exact zeros (TensorStatistics::zero_count()):
// after a ReLU they are a spike in bin 0 that made the KL minimum sit at the smallest candidate
// (128 of >= 2048 bins), clipping to a few percent of the range.
int EntropyThresholdBins(const TensorStatistics& stats);
// The same on explicit bins.
int EntropyThresholdBins(const std::vector<uint64_t>& bins);

}  // namespace ptqkit::calib
