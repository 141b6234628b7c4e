// The fast fake-quantization paths of numerics.h (FakeQuantizeInt8, FakeQuantizeFloat8E4M3FN),
// in a file of their own: it is built with -O3 -fno-trapping-math so that the loops vectorise,
// while the scalar reference implementations keep the project's usual flags.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

#include "quant/numerics.h"

namespace ptqkit {
namespace {

// DequantizeInt8(QuantizeInt8(x, s), s) without the integer round trip.
inline float FakeInt8(float x, float scale) {
  float v = x / scale;
  // Comparisons rather than fmin/fmax, so that the loops below vectorise (NaN -> -128 first).
  v = v != v ? -128.0f : v;
  v = v < -128.0f ? -128.0f : v;
  v = v > 127.0f ? 127.0f : v;
  // Adding and subtracting 1.5 * 2^23 rounds |v| < 2^22 to an integer, ties to even (in the
  // default rounding mode); -0 comes out +0, as the integer round trip gives.
  v = (v + 0x1.8p23f) - 0x1.8p23f;
  return v * scale;
}

// Float8E4M3FNToFloat(QuantizeFloat8E4M3FN(x, s)) * s on the float's own bits.
inline float FakeFloat8(float x, float scale) {
  const float v = x / scale;
  const uint32_t bits = std::bit_cast<uint32_t>(v);
  const uint32_t sign = bits & 0x80000000u;
  const uint32_t abs_bits = bits & 0x7fffffffu;
  float magnitude;
  if (abs_bits > 0x7f800000u) return Float8E4M3FNToFloat(FloatToFloat8E4M3FN(v)) * scale;  // NaN
  if (abs_bits >= std::bit_cast<uint32_t>(448.0f)) {
    magnitude = 448.0f;
  } else if (abs_bits >= std::bit_cast<uint32_t>(0x1p-6f)) {
    // As FloatToFloat8E4M3FN: round the 20 dropped mantissa bits to nearest even, then drop them.
    magnitude = std::bit_cast<float>((abs_bits + 0x7ffffu + ((abs_bits >> 20) & 1u)) & 0xfff00000u);
  } else {
    // Subnormal: multiples of 2^-9; |v| * 2^9 is exact and below 8, rounded as in FakeInt8.
    magnitude = ((std::bit_cast<float>(abs_bits) * 0x1p9f + 0x1.8p23f) - 0x1.8p23f) * 0x1p-9f;
  }
  return std::bit_cast<float>(std::bit_cast<uint32_t>(magnitude) | sign) * scale;
}

template <float (*Fake)(float, float)>
void FakeQuantizeAll(float* values, int64_t count, const float* scales, int64_t channels, int64_t inner) {
  if (channels <= 1) {
    const float s = scales[0];
    for (int64_t i = 0; i < count; ++i) values[i] = Fake(values[i], s);
    return;
  }
  if (inner == 1) {  // the channel is the last axis (MatMul weights [K, N]): one row at a time
    for (int64_t row = 0; row < count; row += channels) {
      const int64_t n = std::min(channels, count - row);
      float* v = values + row;
      for (int64_t c = 0; c < n; ++c) v[c] = Fake(v[c], scales[c]);
    }
    return;
  }
  int64_t i = 0;
  while (i < count) {
    for (int64_t c = 0; c < channels && i < count; ++c) {
      const float s = scales[c];
      const int64_t end = std::min(count, i + inner);
      for (; i < end; ++i) values[i] = Fake(values[i], s);
    }
  }
}

}  // namespace

void FakeQuantizeInt8(float* values, int64_t count, const float* scales, int64_t channels, int64_t inner) {
  FakeQuantizeAll<FakeInt8>(values, count, scales, channels, inner);
}

void FakeQuantizeFloat8E4M3FN(float* values, int64_t count, const float* scales, int64_t channels, int64_t inner) {
  FakeQuantizeAll<FakeFloat8>(values, count, scales, channels, inner);
}

}  // namespace ptqkit
