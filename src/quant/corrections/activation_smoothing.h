// Activation smoothing (SmoothQuant, Xiao et al. 2023): a MatMul input X with a few channels far
// larger than the rest wastes most of a per-tensor INT8 scale on them, while the weights (one
// scale per output column) have room to spare. Dividing input channel j by
//     s_j = amax_j^alpha / wmax_j^(1 - alpha)
// (amax_j: largest |X[..., j]| on the calibration data; wmax_j: largest |W[j, :]| over the
// MatMuls reading X) and multiplying row j of every such weight by s_j leaves X @ W unchanged in
// float and evens out X's channels for the per-tensor scale.
//
// The division is folded into a constant, so the graph keeps its nodes (TensorRT's Q/DQ fusions
// see the same pattern): only where X is the output of a Mul by a constant (scalar or one value per
// channel), e.g. the final "* 0.5" of an exported GELU, or a LayerNorm's "* gamma" that only
// MatMuls read; every reader of X must be such a MatMul with a constant [K, N] weight that only it
// reads. Edits weights and that constant; `smoothquant_alpha = 0` turns it off.
// Stateless; thread-safe on distinct graphs.
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <string>
#include <vector>

#include "onnx/graph_index.h"
#include "quant/placement/placement.h"

namespace ptqkit {

struct SmoothingSite {
  std::string tensor;         // X: the Mul's output, read by the MatMuls only
  int mul = -1;               // node producing X
  int constant_input = -1;    // input index of the Mul's constant
  std::vector<int> matmuls;   // readers of X (input 0), each with a constant weight at input 1
};

// Sites of the plan's quantized MatMuls (main graph) where smoothing can be folded; X's channels
// are its last axis. With keep_gelu_constants, not the final "* 0.5" of an exported GELU
// (IsExportedGeluTail): a runtime that fuses GELU (ONNX Runtime's GeluFusion) needs it scalar.
std::vector<SmoothingSite> FindSmoothingSites(const GraphIndex& index, const Placement& plan,
                                              bool keep_gelu_constants = false);

// s_j as above; 1 where amax_j or wmax_j is 0 (nothing to balance). REQUIRES: sizes equal, alpha in (0, 1].
std::vector<float> SmoothingScales(const std::vector<float>& activation_amax, const std::vector<float>& weight_amax,
                                   double alpha);

// Applies smoothing at every site whose per-channel |X| maximum is in `channel_amax` (one value per
// weight row). Returns the number of sites smoothed. REQUIRES: `index` was built over `graph`, no
// edit since.
int SmoothActivations(onnx::GraphProto* graph, const GraphIndex& index, const std::vector<SmoothingSite>& sites,
                      const std::map<std::string, std::vector<float>>& channel_amax, double alpha);

}  // namespace ptqkit
