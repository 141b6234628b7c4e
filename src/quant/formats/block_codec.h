// BlockCodec: how a weight-only format encodes one block of weights. A QuantFormat row with
// `placement.weight_only` points at one; the weight-only search (blocked_weight_search.cc) and the Q/DQ writer
// (qdq_rewrite.h) read it instead of branching on the format's name.
//
//  - int4:  INT4 values in [-8, 7] (UINT4 with --use_zero_point), one scale per block in the
//           weight's float type, amax * alpha / 7; blocks of --block_size along K.
//  - nvfp4: FLOAT4E2M1 values (0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives), blocks of 16.
//           Each block's scale is a FLOAT8E4M3FN code times one float scale per tensor (the
//           "global" scale, tensor amax / (6 * 448), so that the largest block scale lands at
//           E4M3's top): scale = E4M3(amax_block * alpha / 6 / global) * global. The file holds
//           the two-level form TensorRT reads: DequantizeLinear(codes, global) gives the block
//           scales, DequantizeLinear(values, those, axis, block_size 16) the weight (opset 23).
//  - int8 (weight-only, the INT8 side of --mixed_precision int4,int8): INT8 values, one float scale
//           per output channel (amax / 127), written as a per-axis DequantizeLinear for [K, N]
//           weights (blocked along K for others).
//  - mxfp8: FLOAT8E4M3FN values, blocks of 32, each block's scale a power of two (the OCP MX
//           shared exponent, stored as FLOAT8E8M0): the smallest 2^e >= amax_block * alpha / 448,
//           so alpha = 1 never saturates and smaller alphas reach the OCP rule's floor exponent.
//           DequantizeLinear(values, E8M0 scales, axis, block_size 32, output_dtype) (opset 24:
//           ONNX's checker takes E8M0 scales from there).
//
// ONNX Runtime (1.32, CPU) has no DequantizeLinear kernel for FLOAT4E2M1 values or FLOAT8E8M0
// scales, so with --target_runtime ort_cpu the same numbers go in containers it runs (opset 21):
// nvfp4 values as FLOAT8E4M3FN (every E2M1 value is exact in E4M3), mxfp8 scales as the weight's
// float type (every power of two in range is exact). The dequantized weights are bit-identical.
//
// Free functions on values and immutable rows; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ptqkit {

enum class BlockElement : uint8_t { kInt4, kE2M1, kE4M3, kInt8 };
enum class BlockScaleCode : uint8_t {
  kFloat,             // the weight's float type (int4)
  kE4M3TimesGlobal,   // FLOAT8E4M3FN code x one float per tensor (nvfp4)
  kPowerOfTwo,        // FLOAT8E8M0 exponent (mxfp8)
};

struct BlockCodec {
  BlockElement element = BlockElement::kInt4;
  BlockScaleCode scale_code = BlockScaleCode::kFloat;
  float element_max = 7.0f;      // amax * alpha maps to this (before the scale's own rounding)
  int64_t fixed_block_size = 0;  // 0: --block_size decides; -1: one block spanning K (per channel)
  bool zero_points = false;      // --use_zero_point applies (int4's UINT4)
  int64_t ort_cpu_min_opset = 0;  // the opset of the ONNX-Runtime containers (0: same form as trt)
  // The --calibration_method without one given. nvfp4 and mxfp8: rtn. The clip search lowers the
  // modelled error on the calibration activations, but for nvfp4 on PP-OCR rec it cost held-out
  // exact lines 0.82 -> 0.66 while gaining them in-sample (MiniLM: cosine +0.006); for mxfp8 it
  // changes nothing measurable. int4: awq_clip (+0.10 lines on rec, +0.025 cosine on MiniLM).
  const char* default_method = "awq_clip";
  // TensorRT's dynamic block quantizer of this format (domain "trt"), for --quantize_activations
  // (dynamic_block_activation.h); null: the format's activations are not quantized.
  const char* trt_dynamic_quantize = nullptr;
};

// FLOAT4E2M1: 1 sign bit (bit 3), 2 exponent bits (bias 1), 1 mantissa bit; no Inf or NaN.
constexpr float kFloat4E2M1Max = 6.0f;
// The E2M1 code nearest to x / scale: round half to even on the grid, saturating at +-6 (as
// ONNX's saturating cast), NaN gives 0. Zero keeps no sign. The division in float32.
// REQUIRES: scale > 0 and finite.
uint8_t QuantizeFloat4E2M1(float x, float scale);
// An E2M1 code (low 4 bits) as float32, and as the FLOAT8E4M3FN byte of the same value.
float Float4E2M1ToFloat(uint8_t code);
uint8_t Float4E2M1ToFloat8E4M3FN(uint8_t code);
// The E2M1 value nearest to y >= 0 (calib::Grid::nearest).
double NearestFloat4E2M1(double y);

// The nvfp4 global scale of a tensor with absolute maximum `amax`: amax / (6 * 448); a degenerate
// amax (0, NaN, Inf) gives 1. `half`: rounded to float16 and kept a normal float16 (>= 2^-14; a
// larger global only moves the block codes down E4M3's range, which spans 2^15 at full precision).
float Nvfp4GlobalScale(float amax, bool half);

// One block's scale as the model will compute it, and the code stored for it (E4M3 or E8M0 byte;
// 0 for kFloat). `raw` = amax_block * alpha / element_max; `global` is the nvfp4 global scale.
// A block of zeros (raw 0 or not finite) gets the code of 1 x global (nvfp4), 2^0 (mxfp8) or
// kDegenerateScale (kFloat, which is also floored at kMinScale, and rounded to float16 for `half`).
// `half`: the scale is used in float16 (nvfp4: the product is rounded to float16; mxfp8: the
// exponent stays within float16's normal range).
struct CodedScale {
  float scale = 1.0f;
  uint8_t code = 0;
};
CodedScale EncodeBlockScale(const BlockCodec& codec, float raw, float global, bool half);

// The stored value of x in a block with `scale`, and back (x's code under the codec's element
// type, INT8 as its byte; int4 is int4_numerics.h's and is not handled here).
uint8_t QuantizeBlockElement(BlockElement element, float x, float scale);
float DequantizeBlockElement(BlockElement element, uint8_t code, float scale);

// Scales as the bytes of a float32 initializer, or of a float16 one with `half` (each rounded to
// nearest even float16).
std::string ScalesAsBytes(const std::vector<float>& scales, bool half);

}  // namespace ptqkit
