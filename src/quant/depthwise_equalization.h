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
// the QuantizeLinear. Sites whose largest gain is below kMinDepthwiseGain are left alone.
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
// Below this spread of channel ranges there is nothing worth a Mul.
constexpr double kMinDepthwiseGain = 2.0;

struct DepthwiseSite {
  int conv = -1;       // the depthwise Conv
  std::string input;   // its activation input (channel axis 1)
};

// The plan's depthwise Convs (main graph) whose activation input it quantizes and whose weight is a
// float constant no caller can override.
std::vector<DepthwiseSite> FindDepthwiseSites(const GraphIndex& index, const Placement& plan);

// g_c as above (1 for every channel when all are 0).
std::vector<double> DepthwiseGains(const std::vector<float>& channel_amax);

// Equalizes every site whose input's per-channel |x| maxima are in `channel_amax`; returns how many.
// REQUIRES: `index` was built over `graph`, no edit since. Node indices change afterwards.
int EqualizeDepthwiseInputs(onnx::GraphProto* graph, const GraphIndex& index, const std::vector<DepthwiseSite>& sites,
                            const std::map<std::string, std::vector<float>>& channel_amax);

}  // namespace ptqkit
