// Depthwise input equalization: a depthwise Conv (group = input channels = output channels) reads
// each input channel alone, so channel c of its input may be multiplied by g_c if its weights for
// channel c are divided by g_c: the float output is unchanged. After a BatchNormalization fold the
// channels of such an input span very different ranges (0.14 to 72 on the PP-PicoDet layout
// detector's backbone: a per-tensor INT8 step of 0.57 erases the small channels), and weights are
// quantized per channel anyway. So a Mul by
//     g_c = A / max(amax_c, A / kMaxDepthwiseGain),   A = max_c amax_c
// (amax_c: largest |x_c| on the calibration data) is put on the Conv's input edge, before its Q/DQ,
// and channel c of the weights divided by g_c: every channel then fills the per-tensor range.
// Where the input is Conv -> [Relu] -> [zero Pad] -> depthwise, each tensor read once, g goes into
// the producing Conv's output channels instead (cross-layer equalization: Relu(g x) = g Relu(x) for
// g > 0), and no node is added. After a HardSwish (not positively homogeneous) g cannot be folded
// back; there the Mul is one pointwise op, which TensorRT fuses with the producer and the
// QuantizeLinear.
// Not where the input comes out of a capped activation (ReLU6 = Clip(0, 6), Sigmoid, HardSigmoid):
// there every channel can reach the cap on some input, whatever the calibration samples showed,
// and a channel amplified by g_c clips at cap / g_c. On EfficientNet-Lite0 (ReLU6) deep channels
// are class-selective: one that peaked at 0.09 on the calibration photos reached 5.2 on held-out
// photos, and equalizing cost top-1 agreement 0.963 -> 0.83 (a 4x gain cap still 0.89; gains
// widened by how far two halves of the calibration samples disagree, 0.89). Uncapped producers
// (HardSwish, Relu, a folded BN) are equalized whatever their spread.
// Stateless; thread-safe on distinct graphs.
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <string>
#include <vector>

#include "onnx/graph_index.h"
#include "quant/placement/placement.h"

namespace ptqkit {

// Channels near 0 on the calibration data are amplified at most this much (a channel that is dead
// there may not be dead on other inputs).
constexpr double kMaxDepthwiseGain = 64.0;

struct DepthwiseSite {
  int conv = -1;       // the depthwise Conv
  std::string input;   // its activation input (channel axis 1)
};

// Whether `tensor` comes out of an activation with a fixed upper bound (Clip with a max, i.e.
// ReLU6; Sigmoid; HardSigmoid), through Identity and constant-mode Pad.
bool CappedByItsProducer(const GraphIndex& index, std::string tensor);

// The plan's depthwise Convs (main graph) whose activation input it quantizes, is not capped by its
// producer, and whose weight is a float constant no caller can override.
std::vector<DepthwiseSite> FindDepthwiseSites(const GraphIndex& index, const Placement& plan);

// g_c as above (1 for every channel when all are 0).
std::vector<double> DepthwiseGains(const std::vector<float>& channel_amax);

// The Conv whose output channels can take a positive gain for `tensor` (Conv -> [Relu] -> [zero
// Pad] -> tensor, every tensor on the way read by one node only, weight and bias constants), or -1.
int FoldableProducerConv(const GraphIndex& index, const std::string& tensor);

// Equalizes every site whose input's per-channel |x| maxima are in `channel_amax`; returns how many.
// REQUIRES: `index` was built over `graph`, no edit since. Node indices change afterwards.
int EqualizeDepthwiseInputs(onnx::GraphProto* graph, const GraphIndex& index, const std::vector<DepthwiseSite>& sites,
                            const std::map<std::string, std::vector<float>>& channel_amax);

}  // namespace ptqkit
