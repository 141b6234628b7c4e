// Bias correction (Nagel et al. 2019, "Data-Free Quantization", section 4.2, with the input
// statistics measured on the calibration data instead of derived from BatchNorm): rounding a Conv's
// weights to the INT8/FP8 grid shifts the expected value of every output channel by
//     E[y_o] - E[y_q,o] = - sum_{c, taps} (W_q - W)[o, c, taps] * E[x_c]
// (E[x_c]: mean of input channel c), a systematic error that per-channel scales do not remove and
// that adds up through a network's layers, worst where a channel has few taps (depthwise convs: 9
// weights). The shift is subtracted from the Conv's bias, which stays float (TensorRT and ONNX
// Runtime add it in float/int32 after the quantized product): the model computes the same function
// except that its quantized convs are centred again. This edits the model's bias values (a new
// bias is added to a Conv that had none); it is on by default and `bias_correction = false` turns
// it off.
//
// W_q is computed exactly as the Q/DQ rewrite will quantize the weight (same per-channel scales
// and rounding, quant/formats/numerics.h). Zero padding is modelled per tap: a tap that falls into the
// padding for a fraction of the output positions contributes that much less to the mean (what
// matters on small feature maps, 3x12 in an OCR classifier); inside the input, E[x] is taken as the
// channel's mean over the whole map. Stateless; thread-safe on distinct graphs.
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <string>
#include <vector>

#include "onnx/graph_index.h"
#include "quant/placement/placement.h"
#include "quant/rewrite/qdq_rewrite.h"

namespace ptqkit {

// The Conv data inputs (input 0) of the plan's quantized Convs with constant per-channel weights:
// the tensors whose channel means (axis 1) CorrectConvBiases needs.
std::vector<std::string> ConvInputsToCorrect(const GraphIndex& index, const Placement& plan);

// Corrects the bias of every Conv of `plan` whose weight the plan quantizes per channel and whose
// input has an entry in `input_means` (channel count = the Conv's input channels). Returns the
// number of Convs corrected. REQUIRES: `index` was built over `graph`, `plan` from `index`, and
// neither the Q/DQ rewrite nor any other edit has run since; `options` are the rewrite's.
struct ConvInputStatistics {
  std::vector<double> mean;      // per input channel
  std::vector<int64_t> shape;    // the input's shape [N, C, spatial...]; empty: padding not modelled
};
int CorrectConvBiases(onnx::GraphProto* graph, const GraphIndex& index, const Placement& plan,
                      const std::map<std::string, ConvInputStatistics>& inputs, const RewriteOptions& options);

// Gives Conv `node` the bias `bias` (one value per output channel): its own bias initializer is
// overwritten, anything else (shared, a Constant node's output, none) is replaced by a fresh
// initializer. `index` is over `graph`; it does not see a fresh initializer.
void SetConvBias(onnx::GraphProto* graph, const GraphIndex& index, int node, const std::vector<float>& bias);

// For each tap of a Conv kernel (row-major over the spatial dims), the fraction of output positions
// at which it reads the input rather than padding. Empty when the attributes or `input_spatial`
// do not allow it (then every tap counts fully).
std::vector<double> TapCoverage(const onnx::NodeProto& conv, const std::vector<int64_t>& kernel,
                                const std::vector<int64_t>& input_spatial);

// The shift of each output channel's mean (sum over input channels and taps of
// (W_q - W) * mean), for weights `w` [O, C/group, taps...] and `w_quantized` of the same shape,
// `input_means` of size C. Exposed for tests.
// `tap_coverage` (TapCoverage) weights each tap; empty = 1 for every tap.
std::vector<double> ConvOutputShift(const std::vector<float>& w, const std::vector<float>& w_quantized,
                                    const std::vector<int64_t>& shape, int64_t group,
                                    const std::vector<double>& input_means,
                                    const std::vector<double>& tap_coverage = {});

// The weight after the Q/DQ pair the rewrite inserts (per-channel along axis 0 of `shape`).
// Exposed for tests.
std::vector<float> FakeQuantizedWeight(const std::vector<float>& w, const std::vector<int64_t>& shape,
                                       const RewriteOptions& options, const std::string& name);

}  // namespace ptqkit
