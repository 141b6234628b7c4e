// Depthwise input equalization: a depthwise Conv (group = input channels = output channels) reads
// each input channel alone, so channel c of its input may be multiplied by g_c if its weights for
// channel c are divided by g_c: the float output is unchanged. After a BatchNormalization fold the
// channels of such an input span very different ranges (0.14 to 72 on the PP-PicoDet layout
// detector's backbone: a per-tensor INT8 step of 0.57 erases the small channels), and weights are
// quantized per channel anyway. So a Mul by
//     g_c = A / max(amax_c, A / kMaxDepthwiseGain),   A = max_c amax_c
// (amax_c: largest |x_c| on the calibration data) is put on the Conv's input edge, before its Q/DQ,
// and channel c of the weights divided by g_c: every channel then fills the per-tensor range.
// The producer is usually a HardSwish/ReLU6 (not positively homogeneous), so g cannot be folded
// into the Conv before it; the Mul is one pointwise op, which TensorRT fuses with the producer and
// the QuantizeLinear.
// Only where a few channels reach far above the typical one (largest channel maximum >= 4x the
// median one: outlier channels, 5-30x on PP-PicoDet and PP-LCNet): where the channels end at a
// shared bound (ReLU6 saturating most of them at 6, EfficientNet-Lite0: 1.0-3.8x) equalizing the
// few small channels cost top-1 agreement 0.977 -> 0.81 on held-out photos, for reasons not yet
// understood (the float function is unchanged; it is not test-time clipping: 4x headroom did not help).
// Stateless; thread-safe on distinct graphs.
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <string>
#include <vector>

#include "onnx/graph_index.h"
#include "quant/placement.h"

namespace ptqkit {

// Channels near 0 on the calibration data are amplified at most this much (a channel that is dead
// there may not be dead on other inputs).
constexpr double kMaxDepthwiseGain = 64.0;
// Sites whose largest channel maximum is below this many times the median channel's are left alone.
constexpr double kMinChannelSpread = 4.0;

struct DepthwiseSite {
  int conv = -1;       // the depthwise Conv
  std::string input;   // its activation input (channel axis 1)
};

// The plan's depthwise Convs (main graph) whose activation input it quantizes and whose weight is a
// float constant no caller can override.
std::vector<DepthwiseSite> FindDepthwiseSites(const GraphIndex& index, const Placement& plan);

// g_c as above (1 for every channel when all are 0).
std::vector<double> DepthwiseGains(const std::vector<float>& channel_amax);

// Largest / median channel maximum (1 when all are 0).
double ChannelSpread(const std::vector<float>& channel_amax);

// Equalizes every site whose input's per-channel |x| maxima are in `channel_amax`; returns how many.
// REQUIRES: `index` was built over `graph`, no edit since. Node indices change afterwards.
int EqualizeDepthwiseInputs(onnx::GraphProto* graph, const GraphIndex& index, const std::vector<DepthwiseSite>& sites,
                            const std::map<std::string, std::vector<float>>& channel_amax);

}  // namespace ptqkit
