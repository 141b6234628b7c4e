// Scalar cases of quant/numerics, worked out by hand; numerics_ort_test.cc checks the same
// functions against ONNX Runtime on many more values.
#include "quant/formats/numerics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "base/log.h"
#include "ptqkit/error.h"

namespace ptqkit {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(NumericsInt8Test, TiesRoundHalfToEven) {
  EXPECT_EQ(QuantizeInt8(0.5f, 1.0f), 0);
  EXPECT_EQ(QuantizeInt8(1.5f, 1.0f), 2);
  EXPECT_EQ(QuantizeInt8(2.5f, 1.0f), 2);
  EXPECT_EQ(QuantizeInt8(-0.5f, 1.0f), 0);
  EXPECT_EQ(QuantizeInt8(-1.5f, 1.0f), -2);
  EXPECT_EQ(QuantizeInt8(-2.5f, 1.0f), -2);
  EXPECT_EQ(QuantizeInt8(126.5f, 1.0f), 126);
  EXPECT_EQ(QuantizeInt8(0.25f, 0.5f), 0);   // 0.5
  EXPECT_EQ(QuantizeInt8(0.75f, 0.5f), 2);   // 1.5
  EXPECT_EQ(QuantizeInt8(2.51f, 1.0f), 3);
  EXPECT_EQ(QuantizeInt8(-2.49f, 1.0f), -2);
}

TEST(NumericsInt8Test, SaturatesToFullInt8Range) {
  EXPECT_EQ(QuantizeInt8(127.0f, 1.0f), 127);
  EXPECT_EQ(QuantizeInt8(127.5f, 1.0f), 127);
  EXPECT_EQ(QuantizeInt8(1000.0f, 1.0f), 127);
  EXPECT_EQ(QuantizeInt8(-127.0f, 1.0f), -127);
  EXPECT_EQ(QuantizeInt8(-128.0f, 1.0f), -128);  // ONNX: [-128, 127], not symmetric.
  EXPECT_EQ(QuantizeInt8(-1000.0f, 1.0f), -128);
  EXPECT_EQ(QuantizeInt8(kInf, 1.0f), 127);
  EXPECT_EQ(QuantizeInt8(-kInf, 1.0f), -128);
  EXPECT_EQ(QuantizeInt8(std::numeric_limits<float>::max(), 0.5f), 127);
  EXPECT_EQ(QuantizeInt8(kNaN, 1.0f), -128);  // As ONNX Runtime.
  EXPECT_EQ(QuantizeInt8(-kNaN, 1.0f), -128);
  EXPECT_EQ(QuantizeInt8(-0.0f, 1.0f), 0);
}

TEST(NumericsInt8Test, DividesInFloat32) {
  // In float32, -35.25f / 0.3f is -117.49999 (-> -117) while -35.25f * (1 / 0.3f) is exactly
  // -117.5 (-> -118): the two orders quantize differently, and ONNX Runtime divides.
  const float s = 0.3f;
  const float x = -35.25f;
  EXPECT_EQ(QuantizeInt8(x, s), -117);
  EXPECT_EQ(DequantizeInt8(-128, 0.5f), -64.0f);
  EXPECT_EQ(DequantizeInt8(3, 0.1f), 3.0f * 0.1f);
}

TEST(NumericsFloat8Test, EncodesKnownValues) {
  EXPECT_EQ(FloatToFloat8E4M3FN(0.0f), 0x00);
  EXPECT_EQ(FloatToFloat8E4M3FN(-0.0f), 0x80);
  EXPECT_EQ(FloatToFloat8E4M3FN(1.0f), 0x38);
  EXPECT_EQ(FloatToFloat8E4M3FN(-2.0f), 0xC0);
  EXPECT_EQ(FloatToFloat8E4M3FN(448.0f), 0x7E);
  EXPECT_EQ(FloatToFloat8E4M3FN(-448.0f), 0xFE);
  EXPECT_EQ(FloatToFloat8E4M3FN(0x1p-6f), 0x08);   // Smallest normal.
  EXPECT_EQ(FloatToFloat8E4M3FN(0x1p-9f), 0x01);   // Smallest subnormal.
  EXPECT_EQ(FloatToFloat8E4M3FN(7 * 0x1p-9f), 0x07);
}

TEST(NumericsFloat8Test, RoundsToNearestEvenAndSaturates) {
  EXPECT_EQ(FloatToFloat8E4M3FN(1.0625f), 0x38);  // Tie between 1.0 and 1.125: even is 1.0.
  EXPECT_EQ(FloatToFloat8E4M3FN(1.1875f), 0x3A);  // Tie between 1.125 and 1.25: even is 1.25.
  EXPECT_EQ(FloatToFloat8E4M3FN(1.07f), 0x39);
  EXPECT_EQ(FloatToFloat8E4M3FN(0x1p-10f), 0x00);      // Half the smallest subnormal: tie to 0.
  EXPECT_EQ(FloatToFloat8E4M3FN(-0x1p-10f), 0x80);
  EXPECT_EQ(FloatToFloat8E4M3FN(0x1.8p-9f), 0x02);     // 1.5 units: tie to 2.
  EXPECT_EQ(FloatToFloat8E4M3FN(0x1.4p-9f), 0x01);
  EXPECT_EQ(FloatToFloat8E4M3FN(15 * 0x1p-10f), 0x08);  // 7.5 units: tie to 8 = 2^-6.
  EXPECT_EQ(FloatToFloat8E4M3FN(1e-30f), 0x00);
  EXPECT_EQ(FloatToFloat8E4M3FN(std::numeric_limits<float>::denorm_min()), 0x00);
  EXPECT_EQ(FloatToFloat8E4M3FN(440.0f), 0x7E);   // Tie between 416 and 448: even is 448.
  EXPECT_EQ(FloatToFloat8E4M3FN(430.0f), 0x7D);   // 416
  EXPECT_EQ(FloatToFloat8E4M3FN(464.0f), 0x7E);
  EXPECT_EQ(FloatToFloat8E4M3FN(1e6f), 0x7E);
  EXPECT_EQ(FloatToFloat8E4M3FN(kInf), 0x7E);
  EXPECT_EQ(FloatToFloat8E4M3FN(-kInf), 0xFE);
  EXPECT_EQ(FloatToFloat8E4M3FN(kNaN), 0x7F);
  EXPECT_EQ(FloatToFloat8E4M3FN(-kNaN), 0xFF);
  EXPECT_EQ(QuantizeFloat8E4M3FN(896.0f, 2.0f), 0x7E);
  EXPECT_EQ(QuantizeFloat8E4M3FN(3.0f, 2.0f), 0x3C);  // 1.5
}

TEST(NumericsFloat8Test, DecodeRoundTripsEveryValue) {
  for (int b = 0; b < 256; ++b) {
    const auto bits = static_cast<uint8_t>(b);
    const float x = Float8E4M3FNToFloat(bits);
    if ((b & 0x7f) == 0x7f) {
      EXPECT_TRUE(std::isnan(x)) << b;
      EXPECT_EQ(std::signbit(x), (b & 0x80) != 0);
    } else {
      EXPECT_EQ(FloatToFloat8E4M3FN(x), bits) << b;
    }
  }
  EXPECT_EQ(Float8E4M3FNToFloat(0x7E), 448.0f);
  EXPECT_EQ(Float8E4M3FNToFloat(0x01), 0x1p-9f);
  EXPECT_EQ(Float8E4M3FNToFloat(0x3A), 1.25f);
}

TEST(NumericsScaleTest, ScaleFromAmax) {
  EXPECT_EQ(ScaleFromAmax(127.0f, kInt8QuantMax, "t"), 1.0f);
  EXPECT_EQ(ScaleFromAmax(448.0f, kFloat8E4M3FNMax, "t"), 1.0f);
  EXPECT_EQ(ScaleFromAmax(2.0f, kInt8QuantMax, "t"), 2.0f / 127.0f);
  const int warnings = log::WarningCount();
  for (float amax : {0.0f, -0.0f, -1.0f, kNaN, kInf, -kInf}) {
    const float scale = ScaleFromAmax(amax, kInt8QuantMax, "conv_out");
    EXPECT_EQ(scale, kDegenerateScale) << amax;
    EXPECT_TRUE(std::isnormal(scale));
  }
  EXPECT_EQ(log::WarningCount(), warnings + 6);
  // A positive amax so small that amax / 127 is subnormal or zero.
  EXPECT_EQ(ScaleFromAmax(std::numeric_limits<float>::denorm_min(), kInt8QuantMax, "t"), kMinScale);
  EXPECT_EQ(ScaleFromAmax(1e-37f, kInt8QuantMax, "t"), kMinScale);
  EXPECT_EQ(log::WarningCount(), warnings + 8);
}

TEST(NumericsPerChannelTest, AbsMaxAndQuantizeAlongEachAxis) {
  // shape 2x3x2, values v[i][j][k] = (i*6 + j*2 + k + 1) * (k ? -1 : 1).
  const std::vector<int64_t> shape = {2, 3, 2};
  std::vector<float> w(12);
  for (int i = 0; i < 12; ++i) w[i] = static_cast<float>(i + 1) * ((i % 2) ? -1.0f : 1.0f);
  EXPECT_EQ(AbsMaxPerChannel(w.data(), shape, 0), (std::vector<float>{6, 12}));
  EXPECT_EQ(AbsMaxPerChannel(w.data(), shape, 1), (std::vector<float>{8, 10, 12}));
  EXPECT_EQ(AbsMaxPerChannel(w.data(), shape, -1), (std::vector<float>{11, 12}));
  EXPECT_THROW(AbsMaxPerChannel(w.data(), shape, 3), Error);
  EXPECT_THROW(AbsMaxPerChannel(w.data(), shape, -4), Error);

  const std::vector<float> scales = {0.5f, 1.0f, 2.0f};
  std::vector<int8_t> q(12);
  QuantizeInt8PerChannel(w.data(), shape, 1, scales, q.data());
  for (int i = 0; i < 12; ++i) {
    const int channel = (i / 2) % 3;
    EXPECT_EQ(q[i], QuantizeInt8(w[i], scales[channel])) << i;
  }
  EXPECT_THROW(QuantizeInt8PerChannel(w.data(), shape, 0, scales, q.data()), Error);

  std::vector<float> with_nan = {1.0f, kNaN, -3.0f, 2.0f};
  EXPECT_EQ(AbsMaxPerChannel(with_nan.data(), {2, 2}, 0), (std::vector<float>{1, 3}));
}

// The fast fake-quantization paths against the scalar functions, element for element: ties,
// saturation, subnormals, infinities, NaN and random bit patterns, per tensor and per channel
// (a scale every value, and runs of several values).
std::vector<float> FakeQuantizeProbe(float scale) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> v = {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(),
                          -std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::max(),
                          std::numeric_limits<float>::denorm_min(), -1e-40f, 1e-20f};
  for (int k = -140; k <= 140; ++k) {
    for (float x : {(k + 0.5f) * scale, k * scale, k * 0.37f * scale}) {
      v.push_back(x);
      v.push_back(std::nextafter(x, inf));
      v.push_back(std::nextafter(x, -inf));
    }
  }
  for (int e = -20; e <= 12; ++e) {  // the FP8 range and around it, times the scale
    for (int m = 0; m < 64; ++m) v.push_back(std::ldexp(1.0f + m / 64.0f, e) * scale * (m % 2 ? -1.0f : 1.0f));
  }
  uint32_t state = 12345;
  for (int i = 0; i < 4001; ++i) {
    state = state * 1664525u + 1013904223u;
    float x;
    std::memcpy(&x, &state, sizeof x);
    v.push_back(x);
  }
  return v;
}

bool SameValue(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  uint32_t x, y;
  std::memcpy(&x, &a, sizeof x);
  std::memcpy(&y, &b, sizeof y);
  return x == y;
}

TEST(NumericsFakeQuantizeTest, EqualsTheScalarRoundTripElementForElement) {
  const std::vector<float> scales = {0.0173f, 1.0f, 3.7e-5f, 0.5f, 1234.5f};
  for (int64_t inner : {1, 3}) {
    for (int64_t channels : {1, 5}) {
      std::vector<float> values;
      for (float s : scales) {
        const std::vector<float> probe = FakeQuantizeProbe(s);
        values.insert(values.end(), probe.begin(), probe.end());
      }
      std::vector<float> int8 = values, fp8 = values;
      FakeQuantizeInt8(int8.data(), int8.data(), static_cast<int64_t>(values.size()), scales.data(), channels, inner);
      std::vector<float> fp8_out(values.size());  // out of place
      FakeQuantizeFloat8E4M3FN(fp8.data(), fp8_out.data(), static_cast<int64_t>(values.size()), scales.data(), channels,
                               inner);
      fp8 = fp8_out;
      for (size_t i = 0; i < values.size(); ++i) {
        const float s = channels > 1 ? scales[(i / inner) % channels] : scales[0];
        const float want8 = DequantizeInt8(QuantizeInt8(values[i], s), s);
        const float wantf8 = Float8E4M3FNToFloat(QuantizeFloat8E4M3FN(values[i], s)) * s;
        ASSERT_TRUE(SameValue(int8[i], want8)) << "int8: " << values[i] << " scale " << s << " gave " << int8[i];
        ASSERT_TRUE(SameValue(fp8[i], wantf8)) << "fp8: " << values[i] << " scale " << s << " gave " << fp8[i];
      }
    }
  }
}

TEST(NumericsFakeQuantizeTest, QuantizeAllEqualsTheScalarQuantizeElementForElement) {
  const std::vector<float> scales = {0.0173f, 1.0f, 3.7e-5f, 0.5f, 1234.5f};
  for (int64_t inner : {1, 3}) {
    for (int64_t channels : {1, 5}) {
      std::vector<float> values;
      for (float s : scales) {
        const std::vector<float> probe = FakeQuantizeProbe(s);
        values.insert(values.end(), probe.begin(), probe.end());
      }
      std::vector<uint8_t> int8(values.size()), fp8(values.size());
      const auto n = static_cast<int64_t>(values.size());
      QuantizeAllInt8(values.data(), n, scales.data(), channels, inner, int8.data());
      QuantizeAllFloat8E4M3FN(values.data(), n, scales.data(), channels, inner, fp8.data());
      for (size_t i = 0; i < values.size(); ++i) {
        const float s = channels > 1 ? scales[(i / inner) % channels] : scales[0];
        ASSERT_EQ(int8[i], static_cast<uint8_t>(QuantizeInt8(values[i], s))) << "int8: " << values[i] << " scale " << s;
        ASSERT_EQ(fp8[i], QuantizeFloat8E4M3FN(values[i], s)) << "fp8: " << values[i] << " scale " << s;
      }
    }
  }
}

}  // namespace
}  // namespace ptqkit
