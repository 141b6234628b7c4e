#include "quant/formats/block_codec.h"

#include <cmath>

#include "onnx/float16.h"
#include "quant/formats/numerics.h"

namespace ptqkit {
namespace {

// The E2M1 magnitudes by code 0..7.
constexpr float kE2M1Values[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};

// Magnitude code of |v| (v not NaN): the thresholds are the midpoints between neighbours; a value
// on a midpoint goes to the even code (<= keeps the lower neighbour when its code is even).
uint8_t E2M1MagnitudeCode(float a) {
  if (a <= 0.25f) return 0;
  if (a < 0.75f) return 1;
  if (a <= 1.25f) return 2;
  if (a < 1.75f) return 3;
  if (a <= 2.5f) return 4;
  if (a < 3.5f) return 5;
  if (a <= 5.0f) return 6;
  return 7;  // saturates at 6
}

}  // namespace

uint8_t QuantizeFloat4E2M1(float x, float scale) {
  const float v = x / scale;
  if (v != v) return 0;
  const uint8_t m = E2M1MagnitudeCode(std::fabs(v));
  return m != 0 && v < 0.0f ? static_cast<uint8_t>(m | 0x8) : m;
}

float Float4E2M1ToFloat(uint8_t code) {
  const float m = kE2M1Values[code & 0x7];
  return (code & 0x8) ? -m : m;
}

uint8_t Float4E2M1ToFloat8E4M3FN(uint8_t code) { return FloatToFloat8E4M3FN(Float4E2M1ToFloat(code)); }

double NearestFloat4E2M1(double y) { return kE2M1Values[E2M1MagnitudeCode(static_cast<float>(y))]; }

float Nvfp4GlobalScale(float amax, bool half) {
  if (!(std::isfinite(amax) && amax > 0.0f)) return 1.0f;
  float g = amax / (kFloat4E2M1Max * kFloat8E4M3FNMax);
  if (half) return g < kDegenerateScale ? kDegenerateScale : HalfToFloat(FloatToHalf(g));
  return g < kMinScale ? kMinScale : g;
}

CodedScale EncodeBlockScale(const BlockCodec& codec, float raw, float global, bool half) {
  CodedScale out;
  const bool degenerate = !(std::isfinite(raw) && raw > 0.0f);
  switch (codec.scale_code) {
    case BlockScaleCode::kFloat:
      out.scale = degenerate ? kDegenerateScale : (raw < kMinScale ? kMinScale : raw);
      if (half) {
        const float h = HalfToFloat(FloatToHalf(out.scale));
        out.scale = h < kDegenerateScale ? kDegenerateScale : h;
      }
      return out;
    case BlockScaleCode::kE4M3TimesGlobal: {
      constexpr uint8_t kOne = 0x38;          // E4M3 1.0
      constexpr uint8_t kSmallest = 0x01;     // 2^-9, the smallest positive E4M3
      out.code = degenerate ? kOne : FloatToFloat8E4M3FN(raw / global);
      if (Float8E4M3FNToFloat(out.code) == 0.0f) out.code = kSmallest;  // a scale of 0 would divide by 0
      out.scale = Float8E4M3FNToFloat(out.code) * global;  // what DequantizeLinear(code, global) gives
      if (half) out.scale = HalfToFloat(FloatToHalf(out.scale));
      return out;
    }
    case BlockScaleCode::kPowerOfTwo: {
      int e = 0;
      if (!degenerate) {
        const float m = std::frexp(raw, &e);  // raw = m * 2^e, m in [0.5, 1)
        if (m == 0.5f) e -= 1;                 // raw is a power of two itself
      }
      // Normal numbers of the type the scale is used in: float32 [-126, 127], float16 [-14, 15].
      const int lo = half ? -14 : -126, hi = half ? 15 : 127;
      e = e < lo ? lo : (e > hi ? hi : e);
      out.scale = std::ldexp(1.0f, e);
      out.code = static_cast<uint8_t>(e + 127);
      return out;
    }
  }
  return out;
}

uint8_t QuantizeBlockElement(BlockElement element, float x, float scale) {
  switch (element) {
    case BlockElement::kE2M1: return QuantizeFloat4E2M1(x, scale);
    case BlockElement::kInt8: return static_cast<uint8_t>(QuantizeInt8(x, scale));
    default: return QuantizeFloat8E4M3FN(x, scale);
  }
}

float DequantizeBlockElement(BlockElement element, uint8_t code, float scale) {
  switch (element) {
    case BlockElement::kE2M1: return Float4E2M1ToFloat(code) * scale;
    case BlockElement::kInt8: return DequantizeInt8(static_cast<int8_t>(code), scale);
    default: return Float8E4M3FNToFloat(code) * scale;
  }
}

std::string ScalesAsBytes(const std::vector<float>& scales, bool half) {
  if (!half) return std::string(reinterpret_cast<const char*>(scales.data()), scales.size() * sizeof(float));
  std::vector<uint16_t> h(scales.size());
  for (size_t i = 0; i < h.size(); ++i) h[i] = FloatToHalf(scales[i]);
  return std::string(reinterpret_cast<const char*>(h.data()), h.size() * sizeof(uint16_t));
}

}  // namespace ptqkit
