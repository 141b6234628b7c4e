// Int4 numerics: the scalar reference for ptqkit's 4-bit weight-only format, with ONNX (opset 21)
// semantics, matching ONNX Runtime's DequantizeLinear bit for bit (tests/cpp/quant/int4_*_test.cc check it).
//
//  - INT4 (type 22), symmetric: q = saturate(round_half_even(w / scale)) in [-8, 7], zero point 0,
//    scale = amax * alpha / 7 per block (alpha <= 1 clips, see blocked_weight_search.h).
//  - UINT4 (type 21), asymmetric: q = saturate(round_half_even(w / scale) + zp) in [0, 15] with
//    scale = (max - min) * alpha / 15 over the block's range widened to include 0, so that 0 stays
//    exactly representable (a zero weight, padding, a pruned channel) and zp = round(-min / scale).
//  - Packing: two elements per byte in row-major order, element 0 in the low nibble; an odd count
//    leaves the last high nibble 0.
//  - Blocking (DequantizeLinear's `axis` + `block_size`): along the blocked axis, element k uses
//    scale index k / block_size; the scale tensor has the weight's shape with that axis shortened
//    to ceil(K / block_size), so a short last block needs no padding of the weight itself.
//
// Free functions on values; stateless and thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ptqkit {

constexpr int kInt4Min = -8;
constexpr int kInt4Max = 7;
constexpr int kUint4Max = 15;

// round_half_even(clamp(v, lo, hi)) for integer bounds |lo|, |hi| <= 2^23 (NaN gives lo, as
// fmin(fmax(v, lo), hi)). Clamping before rounding equals clamping after (the bounds are integers)
// and keeps the conversion defined for huge quotients. Inline and free of libm calls (the searches
// call it once per weight and candidate); truncation and the exact remainder v - t make it
// independent of the floating-point environment's rounding mode.
inline int RoundClamped(float v, float lo, float hi) {
  v = v > lo ? v : lo;
  v = v < hi ? v : hi;
  const int t = static_cast<int>(v);
  const float rest = v - static_cast<float>(t);  // exact: |v| <= 2^23
  if (rest > 0.5f || (rest == 0.5f && (t & 1) != 0)) return t + 1;
  if (rest < -0.5f || (rest == -0.5f && (t & 1) != 0)) return t - 1;
  return t;
}

// saturate(round_half_even(x / scale)) in [-8, 7]; the division in float32 as ONNX Runtime does.
// NaN gives 0 (weights with NaN are not meaningful; 0 keeps the block's other values intact).
// REQUIRES: scale > 0 and finite.
inline int8_t QuantizeInt4(float x, float scale) {
  const float v = x / scale;
  if (v != v) return 0;
  return static_cast<int8_t>(RoundClamped(v, kInt4Min, kInt4Max));
}
// saturate(round_half_even(x / scale) + zero_point) in [0, 15]; NaN gives zero_point.
// REQUIRES: scale > 0 and finite, zero_point <= 15.
inline uint8_t QuantizeUint4(float x, float scale, uint8_t zero_point) {
  const float v = x / scale;
  if (v != v) return zero_point;
  // ONNX adds the zero point to the rounded quotient and saturates the sum. Clamping the quotient
  // to [-15, 15] first cannot change the result (the sum saturates either way).
  const int q = RoundClamped(v, -kUint4Max, kUint4Max) + zero_point;
  return static_cast<uint8_t>(q < 0 ? 0 : (q > kUint4Max ? kUint4Max : q));
}
// (q - zero_point) * scale in float32, as DequantizeLinear.
inline float DequantizeInt4(int8_t q, float scale) { return static_cast<float>(q) * scale; }
inline float DequantizeUint4(uint8_t q, float scale, uint8_t zero_point) {
  return static_cast<float>(static_cast<int>(q) - static_cast<int>(zero_point)) * scale;
}

// Packs 4-bit values (only the low 4 bits of each are kept: int8 -1 becomes 0xF) two per byte.
std::string PackInt4(const std::vector<int8_t>& values);
std::string PackUint4(const std::vector<uint8_t>& values);
// The first `count` 4-bit elements of `bytes`, sign-extended for INT4.
// REQUIRES: bytes.size() >= (count + 1) / 2.
std::vector<int8_t> UnpackInt4(std::string_view bytes, int64_t count);
std::vector<uint8_t> UnpackUint4(std::string_view bytes, int64_t count);

// A weight seen as [outer, k, inner] around its blocked axis, cut into blocks of `block` along k.
// Element (o, j, i) has flat index (o * k + j) * inner + i and scale index
// (o * num_blocks() + j / block) * inner + i.
struct BlockedLayout {
  int64_t outer = 1;
  int64_t k = 1;
  int64_t inner = 1;
  int64_t block = 1;

  int64_t num_blocks() const { return (k + block - 1) / block; }
  int64_t num_elements() const { return outer * k * inner; }
  int64_t num_scales() const { return outer * num_blocks() * inner; }
  // The scale tensor's shape: `shape` with the blocked axis shortened to num_blocks().
  std::vector<int64_t> ScaleShape(const std::vector<int64_t>& shape, int axis) const;
};

// Throws ptqkit::Error for an axis out of range, a negative dimension, or block_size 0 or < -1.
// block_size -1 means one block spanning the whole axis (per output channel).
BlockedLayout MakeBlockedLayout(const std::vector<int64_t>& shape, int axis, int64_t block_size);

// Quantization parameters of one block.
struct Int4BlockParams {
  float scale = 1.0f;
  uint8_t zero_point = 0;  // UINT4 only; 0 for INT4
  uint8_t scale_code = 0;  // nvfp4/mxfp8: the E4M3 / E8M0 byte stored for `scale` (block_codec.h)
};

// Parameters for the `n` values w[0], w[stride], ... of one block clipped by `alpha` (0 < alpha <= 1):
// symmetric amax * alpha / 7, or asymmetric as described above. `min_scale` floors the scale
// (kMinScale for float32 scales; float16 scales must stay normal numbers). NaN values are ignored;
// a block of zeros, or one holding an infinity, gets kDegenerateScale (the caller warns).
Int4BlockParams BlockParams(const float* w, int64_t stride, int64_t n, float alpha, bool zero_point,
                            float min_scale);
// The dequantized value of x under `p`: what the model computes after the rewrite.
inline float QuantDequant(float x, const Int4BlockParams& p, bool zero_point) {
  if (zero_point) return DequantizeUint4(QuantizeUint4(x, p.scale, p.zero_point), p.scale, p.zero_point);
  return DequantizeInt4(QuantizeInt4(x, p.scale), p.scale);
}

// Reference blocked DequantizeLinear over a whole weight: out[e] = (q[e] - zp[s]) * scale[s] with
// s the scale index of element e. `zero_points` empty means 0. REQUIRES: sizes match `layout`.
std::vector<float> DequantizeBlocked(const std::vector<int>& q, const std::vector<float>& scales,
                                     const std::vector<int>& zero_points, const BlockedLayout& layout);

}  // namespace ptqkit
