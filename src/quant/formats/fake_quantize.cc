// The fast paths of numerics.h over whole tensors (FakeQuantize*, QuantizeAll*),
// in a file of their own: it is built with -O3 -fno-trapping-math so that the loops vectorise,
// while the scalar reference implementations keep the project's usual flags.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

#include "quant/formats/numerics.h"

namespace ptqkit {
namespace {

// round(clamp(x / scale)) on the int8 grid, as a float.
inline float Int8Level(float x, float scale) {
  float v = x / scale;
  // Comparisons rather than fmin/fmax, so that the loops below vectorise (NaN -> -128 first).
  v = v != v ? -128.0f : v;
  v = v < -128.0f ? -128.0f : v;
  v = v > 127.0f ? 127.0f : v;
  // Adding and subtracting 1.5 * 2^23 rounds |v| < 2^22 to an integer, ties to even (in the
  // default rounding mode); -0 comes out +0, as the integer round trip gives.
  return (v + 0x1.8p23f) - 0x1.8p23f;
}

// DequantizeInt8(QuantizeInt8(x, s), s) without the integer round trip.
inline float FakeInt8(float x, float scale) { return Int8Level(x, scale) * scale; }
inline uint8_t Int8Code(float x, float scale) {
  return static_cast<uint8_t>(static_cast<int8_t>(static_cast<int32_t>(Int8Level(x, scale))));
}

// x / scale rounded onto the FLOAT8E4M3FN grid (saturating at 448), as a float with x's sign; NaN
// for NaN.
inline float Float8Level(float x, float scale) {
  const float v = x / scale;
  const uint32_t bits = std::bit_cast<uint32_t>(v);
  const uint32_t sign = bits & 0x80000000u;
  const uint32_t abs_bits = bits & 0x7fffffffu;
  float magnitude;
  if (abs_bits > 0x7f800000u) return v;  // NaN
  if (abs_bits >= std::bit_cast<uint32_t>(448.0f)) {
    magnitude = 448.0f;
  } else if (abs_bits >= std::bit_cast<uint32_t>(0x1p-6f)) {
    // As FloatToFloat8E4M3FN: round the 20 dropped mantissa bits to nearest even, then drop them.
    magnitude = std::bit_cast<float>((abs_bits + 0x7ffffu + ((abs_bits >> 20) & 1u)) & 0xfff00000u);
  } else {
    // Subnormal: multiples of 2^-9; |v| * 2^9 is exact and below 8, rounded as in Int8Level.
    magnitude = ((std::bit_cast<float>(abs_bits) * 0x1p9f + 0x1.8p23f) - 0x1.8p23f) * 0x1p-9f;
  }
  return std::bit_cast<float>(std::bit_cast<uint32_t>(magnitude) | sign);
}

// Float8E4M3FNToFloat(QuantizeFloat8E4M3FN(x, s)) * s on the float's own bits.
inline float FakeFloat8(float x, float scale) {
  const float level = Float8Level(x, scale);
  if (level != level) return Float8E4M3FNToFloat(FloatToFloat8E4M3FN(level)) * scale;  // NaN
  return level * scale;
}

// QuantizeFloat8E4M3FN(x, s): the level's bits re-biased (exponent 127 -> 7) and cut to 8 bits.
inline uint8_t Float8Code(float x, float scale) {
  const float level = Float8Level(x, scale);
  const uint32_t bits = std::bit_cast<uint32_t>(level);
  const uint32_t sign = (bits >> 24) & 0x80u;
  const uint32_t abs_bits = bits & 0x7fffffffu;
  uint32_t code;
  if (abs_bits > 0x7f800000u) {
    code = 0x7fu;  // NaN
  } else if (abs_bits >= std::bit_cast<uint32_t>(0x1p-6f)) {
    code = (abs_bits >> 20) - ((127u - 7u) << 3);  // exponent and the 3 kept mantissa bits
  } else {
    code = static_cast<uint32_t>(std::bit_cast<float>(abs_bits) * 0x1p9f);  // k * 2^-9, k in 0..7
  }
  return static_cast<uint8_t>(code | sign);
}

// out[i] = Op(values[i], scales[(i / inner) % channels]) (channels <= 1: one scale), in loops the
// compiler vectorises; `out` may be `values` itself (the fake paths work in place).
template <typename Out, Out (*Op)(float, float)>
void MapAll(const float* values, int64_t count, const float* scales, int64_t channels, int64_t inner, Out* out) {
  if (channels <= 1) {
    const float s = scales[0];
    for (int64_t i = 0; i < count; ++i) out[i] = Op(values[i], s);
    return;
  }
  if (inner == 1) {  // the channel is the last axis (MatMul weights [K, N]): one row at a time
    for (int64_t row = 0; row < count; row += channels) {
      const int64_t n = std::min(channels, count - row);
      for (int64_t c = 0; c < n; ++c) out[row + c] = Op(values[row + c], scales[c]);
    }
    return;
  }
  int64_t i = 0;
  while (i < count) {
    for (int64_t c = 0; c < channels && i < count; ++c) {
      const float s = scales[c];
      const int64_t end = std::min(count, i + inner);
      for (; i < end; ++i) out[i] = Op(values[i], s);
    }
  }
}

}  // namespace

void QuantizeAllInt8(const float* values, int64_t count, const float* scales, int64_t channels, int64_t inner,
                     uint8_t* out) {
  MapAll<uint8_t, Int8Code>(values, count, scales, channels, inner, out);
}

void QuantizeAllFloat8E4M3FN(const float* values, int64_t count, const float* scales, int64_t channels, int64_t inner,
                             uint8_t* out) {
  MapAll<uint8_t, Float8Code>(values, count, scales, channels, inner, out);
}

void FakeQuantizeInt8(const float* values, float* out, int64_t count, const float* scales, int64_t channels,
                      int64_t inner) {
  MapAll<float, FakeInt8>(values, count, scales, channels, inner, out);
}

void FakeQuantizeFloat8E4M3FN(const float* values, float* out, int64_t count, const float* scales, int64_t channels,
                              int64_t inner) {
  MapAll<float, FakeFloat8>(values, count, scales, channels, inner, out);
}

}  // namespace ptqkit
