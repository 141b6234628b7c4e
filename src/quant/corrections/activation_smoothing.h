// Activation smoothing (SmoothQuant, Xiao et al. 2023): a MatMul input X with a few channels far
// larger than the rest wastes most of a per-tensor INT8 scale on them, while the weights (one
// scale per output column) have room to spare. Dividing input channel j by
//     s_j = amax_j^alpha / wmax_j^(1 - alpha)
// (amax_j: largest |X[..., j]| on the calibration data; wmax_j: largest |W[j, :]| over the
// MatMuls reading X) and multiplying row j of every such weight by s_j leaves X @ W unchanged in
// float and evens out X's channels for the per-tensor scale.
//
// Where it can, the division is folded into a constant, so the graph keeps its nodes (TensorRT's
// Q/DQ fusions see the same pattern): where X is the output of a Mul by a constant (scalar or one
// value per channel), e.g. the final "* 0.5" of an exported GELU, or a LayerNorm's "* gamma" that
// only MatMuls read; every reader of X must then be such a MatMul with a constant [K, N] weight
// that only it reads. Elsewhere (a LayerNorm output that the residual Add reads too, an attention
// context after its Reshape) a Mul by 1/s is inserted between X and the MatMuls, which the other
// readers skip: a per-channel Mul ahead of a QuantizeLinear, the form ModelOpt's pre-quant scale
// exports and NNCF inserts. It costs a pass over X at run time, so only where X has outlier
// channels (kMinOutlierRatioForInsertedMul in the .cc). Measured on a BERT-class encoder:
// smoothing only the GELU outputs (6 of 24 MatMul groups) left mean cosine at 0.991, every group
// 0.996. Edits weights and that constant; `smoothquant_alpha = 0` turns it off.
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
  std::string tensor;         // X
  int mul = -1;               // the Mul by a constant producing X, which absorbs 1/s; -1: a Mul is inserted
  int constant_input = -1;    // input index of that Mul's constant
  std::vector<int> matmuls;   // the quantized readers of X (input 0) smoothed, each with a constant weight at input 1
};

// Sites of the plan's quantized MatMuls (main graph); X's channels are its last axis. A site whose
// readers are not all such MatMuls, or whose producer is no Mul by a constant, gets an inserted
// Mul. With keep_gelu_constants, the final "* 0.5" of an exported GELU (IsExportedGeluTail) is not
// edited (an inserted Mul follows it): a runtime that fuses GELU (ONNX Runtime's GeluFusion) needs
// it scalar.
std::vector<SmoothingSite> FindSmoothingSites(const GraphIndex& index, const Placement& plan,
                                              bool keep_gelu_constants = false);

// s_j as above; 1 where amax_j or wmax_j is 0 (nothing to balance). REQUIRES: sizes equal, alpha in (0, 1].
std::vector<float> SmoothingScales(const std::vector<float>& activation_amax, const std::vector<float>& weight_amax,
                                   double alpha);

// Applies smoothing at every site whose per-channel |X| maximum is in `channel_amax` (one value per
// weight row). Returns the number of sites smoothed; `inserted` (if given) gets how many of them
// by an inserted Mul (the graph has new nodes: a placement made before is stale). REQUIRES: `index` was built over `graph`, no
// edit since.
int SmoothActivations(onnx::GraphProto* graph, const GraphIndex& index, const std::vector<SmoothingSite>& sites,
                      const std::map<std::string, std::vector<float>>& channel_amax, double alpha,
                      int* inserted = nullptr);

}  // namespace ptqkit
