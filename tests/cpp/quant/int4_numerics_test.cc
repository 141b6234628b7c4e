// The scalar INT4/UINT4 reference: packing order, rounding (ties to even), saturation, blocked
// layouts and per-block parameters on hand-made blocks.
#include "quant/formats/int4_numerics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ptqkit/error.h"
#include "quant/formats/numerics.h"

namespace ptqkit {
namespace {

TEST(Int4Numerics, PackPutsElementZeroInTheLowNibble) {
  EXPECT_EQ(PackInt4({1, 2}), std::string("\x21", 1));
  EXPECT_EQ(PackInt4({-1, -8}), std::string("\x8f", 1));
  EXPECT_EQ(PackUint4({15, 0, 7}), std::string("\x0f\x07", 2));  // odd count: high nibble 0
}

TEST(Int4Numerics, PackUnpackRoundTripsEveryValueAndOddCounts) {
  for (size_t n : {0u, 1u, 2u, 3u, 15u, 16u, 17u, 33u}) {
    std::vector<int8_t> s(n);
    std::vector<uint8_t> u(n);
    for (size_t i = 0; i < n; ++i) {
      s[i] = static_cast<int8_t>(static_cast<int>(i % 16) - 8);
      u[i] = static_cast<uint8_t>((i * 5) % 16);
    }
    const std::string ps = PackInt4(s), pu = PackUint4(u);
    EXPECT_EQ(ps.size(), (n + 1) / 2);
    EXPECT_EQ(UnpackInt4(ps, static_cast<int64_t>(n)), s) << n;
    EXPECT_EQ(UnpackUint4(pu, static_cast<int64_t>(n)), u) << n;
    if (n % 2) {
      EXPECT_EQ(static_cast<uint8_t>(pu.back()) >> 4, 0) << n;
    }
  }
}

TEST(Int4Numerics, QuantizeInt4RoundsHalfToEvenAndSaturates) {
  const float s = 0.5f;
  EXPECT_EQ(QuantizeInt4(0.25f, s), 0);   // 0.5 -> 0
  EXPECT_EQ(QuantizeInt4(0.75f, s), 2);   // 1.5 -> 2
  EXPECT_EQ(QuantizeInt4(1.25f, s), 2);   // 2.5 -> 2
  EXPECT_EQ(QuantizeInt4(-0.25f, s), 0);  // -0.5 -> 0
  EXPECT_EQ(QuantizeInt4(-0.75f, s), -2);
  EXPECT_EQ(QuantizeInt4(-1.25f, s), -2);
  EXPECT_EQ(QuantizeInt4(3.25f, s), 6);   // 6.5 -> 6
  EXPECT_EQ(QuantizeInt4(3.5f, s), 7);
  EXPECT_EQ(QuantizeInt4(3.75f, s), 7);   // 7.5 saturates at 7
  EXPECT_EQ(QuantizeInt4(100.0f, s), 7);
  EXPECT_EQ(QuantizeInt4(-4.0f, s), -8);  // -8 is representable
  EXPECT_EQ(QuantizeInt4(-4.25f, s), -8);  // -8.5 saturates
  EXPECT_EQ(QuantizeInt4(-std::numeric_limits<float>::infinity(), s), -8);
  EXPECT_EQ(QuantizeInt4(std::numeric_limits<float>::quiet_NaN(), s), 0);
}

TEST(Int4Numerics, QuantizeUint4AddsTheZeroPointAfterRounding) {
  EXPECT_EQ(QuantizeUint4(0.0f, 1.0f, 8), 8);
  EXPECT_EQ(QuantizeUint4(2.5f, 1.0f, 8), 10);   // round(2.5) = 2, + 8
  EXPECT_EQ(QuantizeUint4(-3.5f, 1.0f, 3), 0);   // -4 + 3 = -1 saturates to 0
  EXPECT_EQ(QuantizeUint4(7.5f, 1.0f, 8), 15);   // 8 + 8 saturates to 15
  EXPECT_EQ(QuantizeUint4(1e30f, 1.0f, 0), 15);
  EXPECT_EQ(DequantizeUint4(15, 0.25f, 8), 1.75f);
  EXPECT_EQ(DequantizeInt4(-8, 0.25f), -2.0f);
}

TEST(Int4Numerics, SymmetricBlockScaleIsAmaxTimesAlphaOverSeven) {
  const float w[] = {0.5f, -1.4f, 0.7f, 0.0f};
  Int4BlockParams p = BlockParams(w, 1, 4, 1.0f, false, kMinScale);
  EXPECT_FLOAT_EQ(p.scale, 1.4f / 7.0f);
  EXPECT_EQ(p.zero_point, 0);
  EXPECT_EQ(QuantizeInt4(w[1], p.scale), -7);
  EXPECT_EQ(QuantizeInt4(w[0], p.scale), 2);  // 0.5 / 0.2 = 2.5 -> 2 (tie to even)
  p = BlockParams(w, 1, 4, 0.5f, false, kMinScale);
  EXPECT_FLOAT_EQ(p.scale, 0.7f / 7.0f);
  EXPECT_EQ(QuantizeInt4(w[1], p.scale), -8);  // clipped: -14 saturates at -8
  // Strided: every other value of {0.5, 0.7}.
  EXPECT_FLOAT_EQ(BlockParams(w, 2, 2, 1.0f, false, kMinScale).scale, 0.7f / 7.0f);
}

TEST(Int4Numerics, AsymmetricBlockIncludesZeroInItsRange) {
  const float pos[] = {1.0f, 2.5f, 4.0f};  // all positive: range [0, 4]
  Int4BlockParams p = BlockParams(pos, 1, 3, 1.0f, true, kMinScale);
  EXPECT_FLOAT_EQ(p.scale, 4.0f / 15.0f);
  EXPECT_EQ(p.zero_point, 0);
  EXPECT_EQ(QuantDequant(0.0f, p, true), 0.0f);
  const float mixed[] = {-1.0f, 2.0f};  // range [-1, 2]: scale 0.2, zp = round(5) = 5
  p = BlockParams(mixed, 1, 2, 1.0f, true, kMinScale);
  EXPECT_FLOAT_EQ(p.scale, 0.2f);
  EXPECT_EQ(p.zero_point, 5);
  EXPECT_EQ(QuantizeUint4(-1.0f, p.scale, p.zero_point), 0);
  EXPECT_EQ(QuantizeUint4(2.0f, p.scale, p.zero_point), 15);
}

TEST(Int4Numerics, DegenerateBlocksGetTheDegenerateScale) {
  const float zeros[] = {0.0f, -0.0f, 0.0f};
  EXPECT_EQ(BlockParams(zeros, 1, 3, 1.0f, false, kMinScale).scale, kDegenerateScale);
  EXPECT_EQ(BlockParams(zeros, 1, 3, 1.0f, true, kMinScale).scale, kDegenerateScale);
  const float inf[] = {1.0f, std::numeric_limits<float>::infinity()};
  EXPECT_EQ(BlockParams(inf, 1, 2, 1.0f, false, kMinScale).scale, kDegenerateScale);
  const float nan[] = {std::numeric_limits<float>::quiet_NaN(), 0.7f};
  EXPECT_FLOAT_EQ(BlockParams(nan, 1, 2, 1.0f, false, kMinScale).scale, 0.1f);  // NaN ignored
  const float tiny[] = {1e-44f};
  EXPECT_EQ(BlockParams(tiny, 1, 1, 1.0f, false, kMinScale).scale, kMinScale);
}

TEST(Int4Numerics, BlockedLayoutCountsAShortLastBlock) {
  BlockedLayout l = MakeBlockedLayout({10, 3}, 0, 4);  // MatMul [K, N]
  EXPECT_EQ(l.k, 10);
  EXPECT_EQ(l.inner, 3);
  EXPECT_EQ(l.num_blocks(), 3);
  EXPECT_EQ(l.ScaleShape({10, 3}, 0), (std::vector<int64_t>{3, 3}));
  l = MakeBlockedLayout({7, 9}, 1, 4);  // Gemm transB [N, K]
  EXPECT_EQ(l.outer, 7);
  EXPECT_EQ(l.ScaleShape({7, 9}, 1), (std::vector<int64_t>{7, 3}));
  l = MakeBlockedLayout({300, 8}, 0, -1);  // one block over K
  EXPECT_EQ(l.block, 300);
  EXPECT_EQ(l.num_blocks(), 1);
  l = MakeBlockedLayout({64, 8}, 0, 128);  // block longer than K
  EXPECT_EQ(l.block, 64);
  EXPECT_THROW(MakeBlockedLayout({4, 4}, 0, 0), Error);
  EXPECT_THROW(MakeBlockedLayout({4, 4}, 0, -2), Error);
  EXPECT_THROW(MakeBlockedLayout({4, 4}, 2, 4), Error);
}

TEST(Int4Numerics, DequantizeBlockedUsesTheBlockOfEachElement) {
  const BlockedLayout l = MakeBlockedLayout({5, 2}, 0, 2);  // blocks rows {0,1} {2,3} {4}
  const std::vector<int> q = {1, 2, 3, 4, 5, 6, 7, -8, 1, 1};
  const std::vector<float> s = {1, 10, 100, 1000, 0.5f, 0.25f};  // [3 blocks, 2 columns]
  const std::vector<float> y = DequantizeBlocked(q, s, {}, l);
  EXPECT_EQ(y, (std::vector<float>{1, 20, 3, 40, 500, 6000, 700, -8000, 0.5f, 0.25f}));
  const std::vector<float> z = DequantizeBlocked(q, s, {1, 0, 0, 0, 1, 1}, l);
  EXPECT_EQ(z[0], 0.0f);
  EXPECT_EQ(z[8], 0.0f);
}

}  // namespace
}  // namespace ptqkit
