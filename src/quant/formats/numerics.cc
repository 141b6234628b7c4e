#include "quant/formats/numerics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "base/log.h"
#include "ptqkit/error.h"

namespace ptqkit {
namespace {

uint32_t BitsOf(float x) {
  uint32_t b;
  std::memcpy(&b, &x, sizeof(b));
  return b;
}

// Round half to even without depending on the floating-point environment's rounding mode.
// REQUIRES: |v| small enough that v - trunc(v) is exact (always true for floats).
float RoundHalfEven(float v) {
  const float rounded = std::round(v);  // Half away from zero.
  if (std::fabs(v - std::trunc(v)) == 0.5f) return 2.0f * std::round(v * 0.5f);
  return rounded;
}

struct AxisSplit {
  int64_t outer = 1;     // Product of the dims before the axis.
  int64_t channels = 1;  // shape[axis].
  int64_t inner = 1;     // Product of the dims after the axis.
};

AxisSplit SplitAtAxis(const std::vector<int64_t>& shape, int axis) {
  const int rank = static_cast<int>(shape.size());
  if (axis < -rank || axis >= rank) {
    throw Error(fmt::format("per-channel axis {} is out of range for a rank-{} tensor", axis, rank));
  }
  if (axis < 0) axis += rank;
  AxisSplit split;
  for (int d = 0; d < rank; ++d) {
    if (shape[d] < 0) {
      throw Error(fmt::format("per-channel quantization needs a static shape, got dimension {} = {}",
                              d, shape[d]));
    }
    if (d < axis) split.outer *= shape[d];
    if (d == axis) split.channels = shape[d];
    if (d > axis) split.inner *= shape[d];
  }
  return split;
}

}  // namespace

int8_t QuantizeInt8(float x, float scale) {
  const float v = x / scale;  // float32 division, as MLAS.
  // ONNX Runtime's kernel clamps with max/min instructions that return the bound for NaN, then
  // the lower bound wins: NaN -> -128. Clamping to the integer bounds before rounding is the same
  // as after, since the bounds are integers, and keeps the conversion below defined.
  if (std::isnan(v)) return -128;
  const float clamped = std::fmin(std::fmax(v, -128.0f), 127.0f);
  return static_cast<int8_t>(RoundHalfEven(clamped));
}

float DequantizeInt8(int8_t q, float scale) { return static_cast<float>(q) * scale; }

uint8_t FloatToFloat8E4M3FN(float x) {
  const uint32_t bits = BitsOf(x);
  const auto sign = static_cast<uint8_t>((bits >> 24) & 0x80u);
  const uint32_t abs_bits = bits & 0x7fffffffu;
  if (abs_bits > 0x7f800000u) return sign | 0x7f;  // NaN
  if (abs_bits >= BitsOf(448.0f)) return sign | 0x7e;  // Saturate: +-448 (also Inf).
  if (abs_bits >= BitsOf(0x1p-6f)) {
    // Normal in E4M3: keep 3 of the 23 mantissa bits, rounding the 20 dropped bits to nearest
    // even on the integer pattern (a carry into the exponent is the correct result). The result
    // stays <= 448 because inputs are below 448.
    const uint32_t rounded = abs_bits + 0x7ffffu + ((abs_bits >> 20) & 1u);
    const uint32_t e4m3 = (rounded >> 20) - ((127u - 7u) << 3);
    return sign | static_cast<uint8_t>(e4m3);
  }
  // Subnormal in E4M3 (or zero): multiples of 2^-9. |x| * 2^9 is exact and below 8; rounding
  // to 8 gives 0x08, the smallest normal, which is the right encoding.
  const float units = std::fabs(x) * 0x1p9f;
  return sign | static_cast<uint8_t>(RoundHalfEven(units));
}

float Float8E4M3FNToFloat(uint8_t bits) {
  const bool negative = (bits & 0x80) != 0;
  const int exponent = (bits >> 3) & 0xf;
  const int mantissa = bits & 0x7;
  float magnitude;
  if ((bits & 0x7f) == 0x7f) {
    magnitude = std::numeric_limits<float>::quiet_NaN();
  } else if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), -9);
  } else {
    magnitude = std::ldexp(static_cast<float>(8 + mantissa), exponent - 10);
  }
  return negative ? -magnitude : magnitude;
}

uint8_t QuantizeFloat8E4M3FN(float x, float scale) { return FloatToFloat8E4M3FN(x / scale); }

double NearestFloat8E4M3FN(double y) {
  const double max = kFloat8E4M3FNMax;
  if (y >= max) return max;
  if (y <= 0.0) return 0.0;
  int exponent;
  std::frexp(y, &exponent);                  // y = f * 2^exponent, f in [0.5, 1)
  const int e = std::max(exponent - 1, -6);  // unbiased exponent; subnormals share 2^-6's step
  const double step = std::ldexp(1.0, e - 3);
  return std::min(std::nearbyint(y / step) * step, max);
}

float ScaleFromAmax(float amax, float qmax, std::string_view tensor_name, bool warn) {
  if (!(std::isfinite(amax) && amax > 0.0f)) {
    if (warn) log::Warn("tensor '{}' has a degenerate calibration range (amax {}); using scale {}",
              tensor_name, amax, kDegenerateScale);
    return kDegenerateScale;
  }
  const float scale = amax / qmax;
  if (!(scale >= kMinScale)) {
    if (warn) log::Warn("tensor '{}' has a tiny calibration range (amax {}); raising its scale to {}",
              tensor_name, amax, kMinScale);
    return kMinScale;
  }
  return scale;
}

std::vector<float> AbsMaxPerChannel(const float* w, const std::vector<int64_t>& shape, int axis) {
  const AxisSplit split = SplitAtAxis(shape, axis);
  std::vector<float> amax(static_cast<size_t>(split.channels), 0.0f);
  const float* p = w;
  for (int64_t o = 0; o < split.outer; ++o) {
    for (int64_t c = 0; c < split.channels; ++c) {
      float m = amax[c];
      for (int64_t i = 0; i < split.inner; ++i, ++p) {
        const float a = std::fabs(*p);
        m = a > m ? a : m;  // False for NaN, so NaN is skipped.
      }
      amax[c] = m;
    }
  }
  return amax;
}

void QuantizeInt8PerChannel(const float* w, const std::vector<int64_t>& shape, int axis,
                            const std::vector<float>& scales, int8_t* out) {
  const AxisSplit split = SplitAtAxis(shape, axis);
  if (static_cast<int64_t>(scales.size()) != split.channels) {
    throw Error(fmt::format("per-channel quantization along axis {} of shape {} needs {} scales, "
                            "got {}",
                            axis, fmt::join(shape, "x"), split.channels, scales.size()));
  }
  size_t k = 0;
  for (int64_t o = 0; o < split.outer; ++o) {
    for (int64_t c = 0; c < split.channels; ++c) {
      const float scale = scales[c];
      for (int64_t i = 0; i < split.inner; ++i, ++k) out[k] = QuantizeInt8(w[k], scale);
    }
  }
}

}  // namespace ptqkit
