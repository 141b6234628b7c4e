// ChannelStatistics: per-channel sums and maxima of one activation tensor over every batch seen,
// what the weight-editing stages need and the per-tensor calibration table does not keep: the mean
// of each input channel of a quantized Conv (bias correction, quant/corrections/bias_correction.h) and the
// largest |x| per channel of a MatMul input (activation smoothing, quant/corrections/activation_smoothing.h).
// Folded by the calibration pass itself (runtime/activation_capture.h) or by a pass of its own
// (pipeline/channel_capture.h).
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/session.h"

namespace ptqkit {

struct ChannelStatistics {
  std::vector<double> sum;     // per channel, over every other axis and every sample
  std::vector<float> absmax;   // per channel, NaN ignored
  int64_t values_per_channel = 0;
  std::vector<int64_t> shape;  // of the last batch seen (a Conv's padding is judged on it)

  std::vector<double> Mean() const;
};

// Folds one float32 tensor into `stats` along `axis` (negative counts from the end), in a fixed
// order; false when the shape does not fit (the axis is out of range or the channel count changed).
bool FoldChannels(const OutputView& view, int axis, ChannelStatistics* stats);

}  // namespace ptqkit
