// The nvfp4/mxfp8 block numerics: E2M1 rounding (ties to even, saturation, NaN), the E4M3 x global
// block scale of nvfp4 and the power-of-two (E8M0) scale of mxfp8, on hand-picked values.
#include "quant/formats/block_codec.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "onnx/float16.h"
#include "quant/formats/formats.h"
#include "quant/formats/numerics.h"

namespace ptqkit {
namespace {

float E2M1(float x) { return Float4E2M1ToFloat(QuantizeFloat4E2M1(x, 1.0f)); }

TEST(BlockCodec, E2M1RoundsToNearestWithTiesToEvenCodes) {
  // Grid 0, 0.5, 1, 1.5, 2, 3, 4, 6; midpoints go to the even code (0, 1, 1, 2, 2, 4, 4).
  const float in[] = {0.25f, 0.26f, 0.75f, 1.25f, 1.3f, 1.75f, 2.5f, 2.6f, 3.5f, 5.0f, 5.1f};
  const float want[] = {0.0f, 0.5f, 1.0f, 1.0f, 1.5f, 2.0f, 2.0f, 3.0f, 4.0f, 4.0f, 6.0f};
  for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); ++i) {
    EXPECT_EQ(E2M1(in[i]), want[i]) << in[i];
    EXPECT_EQ(E2M1(-in[i]), -want[i]) << -in[i];
  }
}

TEST(BlockCodec, E2M1SaturatesAndMapsNanToZero) {
  EXPECT_EQ(E2M1(7.0f), 6.0f);
  EXPECT_EQ(E2M1(-1e30f), -6.0f);
  EXPECT_EQ(E2M1(std::numeric_limits<float>::infinity()), 6.0f);
  EXPECT_EQ(QuantizeFloat4E2M1(std::nanf(""), 1.0f), 0);
  EXPECT_EQ(QuantizeFloat4E2M1(-0.1f, 1.0f), 0);  // rounds to zero, which keeps no sign
  EXPECT_EQ(QuantizeFloat4E2M1(-6.0f, 1.0f), 0xF);
  EXPECT_EQ(QuantizeFloat4E2M1(3.0f, 0.5f), 0x7);  // 3 / 0.5 = 6
}

TEST(BlockCodec, EveryE2M1CodeIsExactInE4M3) {
  for (uint8_t code = 0; code < 16; ++code) {
    EXPECT_EQ(Float8E4M3FNToFloat(Float4E2M1ToFloat8E4M3FN(code)), Float4E2M1ToFloat(code)) << int(code);
  }
}

TEST(BlockCodec, Nvfp4ScaleIsAnE4M3CodeTimesTheGlobalScale) {
  const BlockCodec& codec = *FindFormat("nvfp4", "--quantize_mode").block_codec;
  const float global = Nvfp4GlobalScale(2688.0f, false);  // tensor amax 2688: global 1
  EXPECT_EQ(global, 1.0f);
  // A block amax of 2688 gives raw 448, E4M3's top.
  CodedScale s = EncodeBlockScale(codec, 2688.0f / 6.0f, global, false);
  EXPECT_EQ(s.scale, 448.0f);
  EXPECT_EQ(s.code, FloatToFloat8E4M3FN(448.0f));
  // E4M3 steps by 1 in [8, 16): 8.5 and 9.5 are ties and go to the even mantissa (8, 10).
  EXPECT_EQ(EncodeBlockScale(codec, 8.5f, global, false).scale, 8.0f);
  EXPECT_EQ(EncodeBlockScale(codec, 9.5f, global, false).scale, 10.0f);
  EXPECT_EQ(EncodeBlockScale(codec, 9.5f, 0.5f, false).scale, 10.0f);  // 9.5 / 0.5 = 19 -> 20 (steps of 2) x 0.5
  // Below E4M3's smallest subnormal the code is raised to it, never 0.
  s = EncodeBlockScale(codec, 1e-6f, global, false);
  EXPECT_EQ(s.code, 0x01);
  EXPECT_EQ(s.scale, std::ldexp(1.0f, -9));
  // A zero block: code 1.0, scale = global.
  s = EncodeBlockScale(codec, 0.0f, 0.25f, false);
  EXPECT_EQ(s.scale, 0.25f);
  EXPECT_EQ(Float8E4M3FNToFloat(s.code), 1.0f);
  EXPECT_EQ(Nvfp4GlobalScale(0.0f, false), 1.0f);
  EXPECT_EQ(Nvfp4GlobalScale(std::nanf(""), false), 1.0f);
  // float16 models: the global stays a normal float16.
  EXPECT_EQ(Nvfp4GlobalScale(1e-3f, true), std::ldexp(1.0f, -14));
}

TEST(BlockCodec, Mxfp8ScaleIsTheSmallestPowerOfTwoAtOrAboveTheRawScale) {
  const BlockCodec& codec = *FindFormat("mxfp8", "--quantize_mode").block_codec;
  CodedScale s = EncodeBlockScale(codec, 1.0f, 0.0f, false);
  EXPECT_EQ(s.scale, 1.0f);
  EXPECT_EQ(s.code, 127);  // E8M0: exponent + 127
  s = EncodeBlockScale(codec, 1.01f, 0.0f, false);
  EXPECT_EQ(s.scale, 2.0f);
  EXPECT_EQ(s.code, 128);
  s = EncodeBlockScale(codec, 0.3f, 0.0f, false);
  EXPECT_EQ(s.scale, 0.5f);
  // So amax / scale <= 448: alpha = 1 never saturates.
  const float amax = 1000.0f;
  s = EncodeBlockScale(codec, amax / 448.0f, 0.0f, false);
  EXPECT_LE(amax / s.scale, 448.0f);
  EXPECT_GT(amax / s.scale, 224.0f);
  // Zero blocks get 2^0; the exponent stays within the normal range of the scale's type.
  EXPECT_EQ(EncodeBlockScale(codec, 0.0f, 0.0f, false).scale, 1.0f);
  EXPECT_EQ(EncodeBlockScale(codec, 1e-30f, 0.0f, true).scale, std::ldexp(1.0f, -14));
  EXPECT_EQ(EncodeBlockScale(codec, 1e-40f, 0.0f, false).scale, std::ldexp(1.0f, -126));
}

TEST(BlockCodec, FormatRowsDescribeTheBlockedFormats) {
  const QuantFormat& nvfp4 = FindFormat("nvfp4", "--quantize_mode");
  const QuantFormat& mxfp8 = FindFormat("mxfp8", "--quantize_mode");
  EXPECT_TRUE(nvfp4.placement.weight_only && mxfp8.placement.weight_only);
  EXPECT_EQ(nvfp4.block_codec->fixed_block_size, 16);
  EXPECT_EQ(mxfp8.block_codec->fixed_block_size, 32);
  EXPECT_EQ(nvfp4.values_per_byte, 2);
  EXPECT_EQ(nvfp4.min_opset, 23);
  EXPECT_EQ(mxfp8.min_opset, 24);
  EXPECT_FALSE(nvfp4.block_codec->zero_points);
  EXPECT_TRUE(FindFormat("int4", "--quantize_mode").block_codec->zero_points);
  // Not activation formats: --accuracy_budget and calibration name only int8 and fp8.
  EXPECT_THROW(FindFormat("nvfp4", "--target_precision", true), std::exception);
}

}  // namespace
}  // namespace ptqkit
