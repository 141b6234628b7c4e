// Weight-only quantization's numerics: how each block of a MatMul/Gemm weight is chosen. The
// weights come from the weight-only placement profile (placement.h, weight_only_placement.cc);
// the one Q/DQ writer (qdq_rewrite.h) stores them through the row's block codec, calling
// QuantizeBlockedWeight (blocked_weight_search.cc) with the Grams below.
//
//  - BlockGram holds, for one activation tensor X (all tokens/samples as rows, K columns), the
//    block-diagonal Gram matrices G_b = X_b^T X_b in float64, one per K-block. For a block column
//    w_b of the weight and its quantized copy, the block's squared output error summed over every
//    row is exactly dw^T G_b dw (dw = qdq(w_b) - w_b), so the AWQ-clip search needs no stored
//    activations and no extra inference: memory is K x block_size doubles per activation,
//    independent of the number of samples, and one streaming pass fills all of them.
//  - QuantizeBlockedWeight chooses, per (block, output column), the clipping ratio alpha in
//    {0.50, 0.55, ..., 1.00} (by default) with the least output error (ties keep the larger alpha, so a block
//    with no activation energy gets plain round-to-nearest), or alpha = 1 everywhere without a Gram
//    (RTN).
//  - awq_lite (activation-aware scaling): the same pass also sums |x_k| per input channel k, so
//    a_k = mean |x_k| over every row. For alpha in {0, 0.05, ..., 1} (kAwqLiteAlphaSteps + 1
//    values) the input scales are s_k = a_k^alpha normalised by sqrt(max * min) (so they stay
//    around 1), the weight stores Q(diag(s) W) and the model computes (x * (1/s)) Q(diag(s) W).
//    Each alpha is judged by the modelled output error sum_blocks tr(dW^T G_b dW),
//    dW = diag(1/s) RTN(diag(s) W) - W, on the block-diagonal Grams; the least error wins, ties go
//    to the smaller alpha (alpha = 0 is RTN, so the modelled error never exceeds RTN's). The
//    scaled weight is then quantized with the AWQ-clip search on the Gram of x * (1/s) (ModelOpt
//    runs the scale search and the clip search as two steps too), so awq_lite with alpha = 0 is
//    exactly awq_clip. The block-diagonal G_b approximates the full
//    X^T X (the error terms between blocks are left out): it is what the capture keeps, at K x
//    block_size doubles per activation.
//  - The writer replaces each planned weight input by DequantizeLinear(w_q, scale[, zp], axis,
//    block_size) (opset 21) and drops float weights nothing reads any more. An awq_lite weight
//    whose chosen alpha is > 0 also gets a [K] initializer 1/s (the weight's float type) and, on
//    each consumer, Mul(activation, 1/s) feeding that consumer's input A only (consumers of the
//    same activation with other weights keep their own Mul and scales).
// Written for INT4; nvfp4, mxfp8 and the INT8 side of --mixed_precision use the same search and
// writer with their row's block codec (block_codec.h): its element grid and scale encoding
// replace INT4's (no zero points).
// Free functions and a value type; thread-safe for distinct objects.
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "quant/formats/block_codec.h"
#include "quant/formats/formats.h"
#include "quant/formats/int4_numerics.h"

namespace ptqkit {

class BlockGram {
 public:
  // REQUIRES: k >= 1, 1 <= block <= k.
  BlockGram(int64_t k, int64_t block);

  int64_t k() const { return k_; }
  int64_t block() const { return block_; }
  int64_t num_blocks() const { return (k_ + block_ - 1) / block_; }
  int64_t rows() const { return rows_; }
  // Adds `rows` rows of K values (row-major). Non-finite values count as 0: one NaN activation
  // must not poison every error of its block.
  void AddRows(const float* x, int64_t rows);
  // Adds another Gram of the same K and block (a second consumer of the same weight).
  // Throws ptqkit::Error when the shapes differ.
  void Merge(const BlockGram& other);
  // Block b's matrix, block() x block() row-major (only the upper triangle i <= j is filled;
  // a short last block uses its leading len x len corner).
  const double* Block(int64_t b) const { return data_.data() + b * block_ * block_; }
  // mean |x_k| over every row added (non-finite values count as 0); all 0 before any row.
  std::vector<double> MeanAbs() const;
  // The Gram of the activation with channel k multiplied by factor[k] (K values):
  // G'_b[i][j] = G_b[i][j] * factor[i] * factor[j]; the magnitudes scale the same way.
  BlockGram Scaled(const std::vector<float>& factor) const;

 private:
  int64_t k_;
  int64_t block_;
  int64_t rows_ = 0;
  std::vector<double> data_;
  std::vector<double> abs_sum_;  // sum over rows of |x_k|, for awq_lite
  std::vector<double> row_;
};

// awq_lite's grid: alpha = t / kAwqLiteAlphaSteps for t = 0 .. kAwqLiteAlphaSteps (step 0.05).
constexpr int kAwqLiteAlphaSteps = 20;

// awq_lite's input-channel scales for activation magnitudes `mean_abs` (K values) and `alpha`:
// s_k = m_k^alpha / sqrt(max_j m_j^alpha * min_j m_j^alpha), where m_k is mean_abs[k] floored at
// 1e-4 x its largest value (a dead or non-finite channel gets the floor, so 1/s stays finite).
// All ones when alpha is 0 or no channel has a positive, finite magnitude.
std::vector<float> AwqLiteInputScales(const std::vector<double>& mean_abs, double alpha);

struct BlockedWeightSearch {
  int64_t block_size = 128;  // -1: one block spanning K
  bool zero_point = false;   // UINT4 + zero points instead of symmetric INT4
  bool half_scales = false;  // float16 weight: scales are stored (and searched) as float16
  // AWQ-clip candidates: alpha = 1 - s * alpha_step for s = 1, 2, ... while alpha >= alpha_min
  // (ModelOpt's awqclip_alpha_step / awqclip_alpha_min), besides alpha = 1.
  double alpha_min = 0.5;
  double alpha_step = 0.05;
  int threads = 1;           // the clip search splits output columns across threads
  // awq_lite: per input channel scaling chosen on the Gram (see above), then the clip search on
  // the scaled weight. Needs a Gram; without one (or for a weight of rank > 2) the weight gets RTN.
  bool awq_lite = false;
  // The element and scale encoding (block_codec.h); null: int4 (INT4, or UINT4 with zero_point).
  const BlockCodec* codec = nullptr;
};

struct BlockedWeight {
  BlockedLayout layout;
  std::vector<int64_t> scale_shape;
  std::string packed;                // the values: 4-bit ones two per byte, 8-bit ones a byte each
  std::vector<float> scales;         // layout.num_scales(), in scale-index order (as the model computes them)
  // nvfp4/mxfp8: the stored E4M3 / E8M0 byte of each scale, and nvfp4's global scale (the
  // weight's float type's value).
  std::vector<uint8_t> scale_codes;
  float global_scale = 0.0f;
  std::vector<uint8_t> zero_points;  // same, UINT4 only
  int64_t clipped_blocks = 0;        // blocks whose alpha < 1
  // awq_lite: the chosen alpha and the factor the activation is multiplied by, per K channel
  // (1/s, rounded to float16 for a float16 weight: the value the model will use). Empty when
  // awq_lite was not run or chose alpha = 0 (the weight is then plain RTN).
  double awq_lite_alpha = 0.0;
  std::vector<float> activation_scales;
  // awq_lite: the modelled output error of RTN on the scaled weight for each alpha of the grid
  // (index t: alpha t / 20), before the clip search; element 0 is RTN's. Empty when awq_lite was
  // not run.
  std::vector<double> awq_lite_errors;
};

// Quantizes one weight of `shape` (float32 values) blocked along `axis`. `gram` (may be null:
// RTN) must describe the K axis with the same block; it is used only when the weight is [K, N]
// or [N, K] (rank 2). Deterministic whatever the thread count. Throws ptqkit::Error for a bad
// axis/block or a Gram of another shape.
BlockedWeight QuantizeBlockedWeight(const std::vector<float>& w, const std::vector<int64_t>& shape, int axis,
                              const BlockGram* gram, const BlockedWeightSearch& options);

// What the writer needs for the blocked weights of a weight-only plan (qdq_rewrite.h
// RewriteOptions::blocked).
struct BlockedWeightOptions {
  BlockedWeightSearch weight;
  // activation tensor -> its Gram (AWQ-clip); null or missing entries: RTN for those weights.
  const std::map<std::string, BlockGram>* grams = nullptr;
  // --mixed_precision: these weights (initializer names) are stored in `high_format` (its codec's
  // block, round to nearest) instead of the rewrite's format.
  const QuantFormat* high_format = nullptr;
  std::set<std::string> high_weights;
  // Quantized weights by format, weight and axis, kept across rewrites of copies of one model (the
  // --mixed_precision search quantizes each weight once per format); null: nothing kept.
  std::map<std::string, BlockedWeight>* cache = nullptr;
  // Activations in dynamic blocks (--quantize_activations): TensorRT's ops (true) or the standard
  // operators that compute the same values in ONNX Runtime (dynamic_block_activation.h).
  bool trt_activations = true;
};

}  // namespace ptqkit
