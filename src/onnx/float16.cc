#include "onnx/float16.h"

#include <bit>
#include <cmath>

namespace ptqkit {

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t mant = h & 0x3ff;
  if (exp == 0) {
    // Zero or subnormal: value = mant * 2^-24, exact in float.
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t FloatToHalf(float value) {
  const uint32_t f = std::bit_cast<uint32_t>(value);
  const uint16_t sign = static_cast<uint16_t>((f >> 16) & 0x8000);
  const uint32_t abs = f & 0x7fffffff;
  if (abs >= 0x7f800000u) return sign | 0x7c00 | (abs > 0x7f800000u ? 0x200 : 0);  // inf / NaN
  if (abs >= 0x477ff000u) return sign | 0x7c00;  // rounds to >= 65520: overflow to inf
  if (abs < 0x38800000u) {
    // Result is subnormal (or zero) in half: scale to units of 2^-24 and round half to even.
    const float scaled = std::bit_cast<float>(abs) * 16777216.0f;  // exact: power of two
    return sign | static_cast<uint16_t>(std::nearbyint(scaled));
  }
  // Normal: drop 13 mantissa bits with round-half-even.
  uint32_t rebased = abs - (112u << 23);
  const uint32_t rest = rebased & 0x1fff;
  rebased >>= 13;
  if (rest > 0x1000 || (rest == 0x1000 && (rebased & 1))) ++rebased;
  return sign | static_cast<uint16_t>(rebased);
}

}  // namespace ptqkit
