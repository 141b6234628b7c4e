// Hessian-aware weight rounding (GPTQ) and the input Gram matrices it reads: what the rewrite will
// compute from the written values, the error it models against round-to-nearest, and the patches of
// a Conv against a direct computation.
#include "quant/corrections/hessian_rounding.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "quant/formats/formats.h"
#include "quant/formats/input_gram.h"
#include "quant/formats/numerics.h"

namespace ptqkit {
namespace {

// Correlated inputs (what makes GPTQ differ from round to nearest): x = A z, z standard normal.
BlockGram CorrelatedGram(int64_t k, int64_t rows, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> mix(static_cast<size_t>(k * k));
  for (auto& v : mix) v = normal(rng);
  std::vector<float> x(static_cast<size_t>(rows * k));
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<float> z(static_cast<size_t>(k));
    for (auto& v : z) v = normal(rng);
    for (int64_t i = 0; i < k; ++i) {
      float s = 0.0f;
      for (int64_t j = 0; j < k; ++j) s += mix[i * k + j] * z[j] * (j < 3 ? 1.0f : 0.2f);
      x[r * k + i] = s;
    }
  }
  BlockGram g(k, k);
  g.AddRows(x.data(), rows);
  return g;
}

std::vector<float> RandomWeights(int64_t rows, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::vector<float> w(static_cast<size_t>(rows * k));
  for (auto& v : w) v = normal(rng);
  return w;
}

// What the Q/DQ rewrite hands the consumer for `w`: per-row absmax scales, quantize, dequantize.
std::vector<float> AsTheRewriteRunsIt(const std::vector<float>& w, int64_t rows, int64_t k, const QuantFormat& f) {
  std::vector<float> out(w);
  const std::vector<float> amax = AbsMaxPerChannel(w.data(), {rows, k}, 0);
  for (int64_t r = 0; r < rows; ++r) {
    const float s = ScaleFromAmax(amax[r], f.qmax, "w", false);
    for (int64_t c = 0; c < k; ++c) out[r * k + c] = f.dequantize(f.quantize(w[r * k + c], s), s);
  }
  return out;
}

double Modelled(const std::vector<float>& run, const std::vector<float>& w, const BlockGram& g, int64_t rows, int64_t k) {
  double e = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < k; ++i) {
      for (int64_t j = 0; j < k; ++j) {
        const double gij = i <= j ? g.Block(0)[i * k + j] : g.Block(0)[j * k + i];
        e += (run[r * k + i] - w[r * k + i]) * gij * (run[r * k + j] - w[r * k + j]);
      }
    }
  }
  return e;
}

TEST(HessianRounding, UncorrelatedInputsGiveRoundToNearest) {
  const int64_t k = 6, rows = 4;
  BlockGram g(k, k);
  std::vector<float> x(static_cast<size_t>(k * k), 0.0f);
  for (int64_t i = 0; i < k; ++i) x[i * k + i] = 1.0f;  // H = I: no error is worth moving
  g.AddRows(x.data(), k);
  const std::vector<float> w = RandomWeights(rows, k, 3);
  std::vector<float> rounded = w;
  const QuantFormat& int8 = FindFormat("int8", "test");
  const auto r = RoundWithHessian(&rounded, rows, FactorInverseHessian(g.Block(0), k), int8, int8.qmax, false, 1);
  EXPECT_FALSE(r.rounded);  // same codes as round to nearest: not smaller, so left as it was
  EXPECT_NEAR(r.rounded_error, r.nearest_error, 1e-12 + 1e-9 * r.nearest_error);
  EXPECT_EQ(rounded, w);
}

TEST(HessianRounding, CorrelatedInputsLowerTheErrorAndTheRewriteReproducesTheCodes) {
  const int64_t k = 24, rows = 10;
  const BlockGram g = CorrelatedGram(k, 200, 7);
  const std::vector<float> w = RandomWeights(rows, k, 11);
  for (const char* mode : {"int8", "fp8"}) {
    const QuantFormat& f = FindFormat(mode, "test");
    std::vector<float> written = w;
    const auto r = RoundWithHessian(&written, rows, FactorInverseHessian(g.Block(0), k), f, f.qmax, false, 2);
    ASSERT_TRUE(r.rounded) << mode << ": " << r.why_not;
    EXPECT_LT(r.rounded_error, 0.8 * r.nearest_error) << mode;
    // Each row keeps its absmax, so the rewrite computes the same scales ...
    EXPECT_EQ(AbsMaxPerChannel(written.data(), {rows, k}, 0), AbsMaxPerChannel(w.data(), {rows, k}, 0)) << mode;
    // ... and the values it hands the consumer are what was modelled (independent check of the error).
    const std::vector<float> run = AsTheRewriteRunsIt(written, rows, k, f);
    EXPECT_NEAR(Modelled(run, w, g, rows, k), r.rounded_error, 1e-6 * r.rounded_error) << mode;
    EXPECT_NEAR(Modelled(AsTheRewriteRunsIt(w, rows, k, f), w, g, rows, k), r.nearest_error, 1e-6 * r.nearest_error);
    // Quantizing the written values again changes nothing: they are on the grid already.
    EXPECT_EQ(AsTheRewriteRunsIt(run, rows, k, f), run) << mode;
  }
}

TEST(HessianRounding, ThreadCountDoesNotChangeTheResult) {
  const int64_t k = 16, rows = 40;
  const BlockGram g = CorrelatedGram(k, 100, 5);
  const QuantFormat& f = FindFormat("int8", "test");
  const InverseHessianFactor factor = FactorInverseHessian(g.Block(0), k);
  std::vector<float> one = RandomWeights(rows, k, 2), three = one;
  RoundWithHessian(&one, rows, factor, f, f.qmax, false, 1);
  RoundWithHessian(&three, rows, factor, f, f.qmax, false, 3);
  EXPECT_EQ(one, three);
}

TEST(HessianRounding, NonFiniteWeightsAreLeftAlone) {
  const int64_t k = 4;
  const BlockGram g = CorrelatedGram(k, 20, 1);
  std::vector<float> w = {0.1f, NAN, 0.2f, 0.3f};
  const auto r = RoundWithHessian(&w, 1, FactorInverseHessian(g.Block(0), k), FindFormat("int8", "t"), 127.0f, false, 1);
  EXPECT_FALSE(r.rounded);
  EXPECT_TRUE(std::isnan(w[1]));
}

TEST(InputGram, ConvPatchesMatchADirectComputationWithPaddingStrideAndGroups) {
  // x [1, 4, 5, 6], 2 groups, 3x2 kernel, stride (2, 1), pads (1, 0, 1, 1), dilation (1, 2).
  onnx::NodeProto conv;
  conv.set_op_type("Conv");
  const auto ints = [&](const char* name, std::vector<int64_t> v) {
    auto* a = conv.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (auto i : v) a->add_ints(i);
  };
  auto* group = conv.add_attribute();
  group->set_name("group");
  group->set_type(onnx::AttributeProto::INT);
  group->set_i(2);
  ints("strides", {2, 1});
  ints("pads", {1, 0, 1, 1});
  ints("dilations", {1, 2});
  ConvGeometry geometry;
  std::string why;
  ASSERT_TRUE(MakeConvGeometry(conv, {4, 2, 3, 2}, &geometry, &why)) << why;
  const int64_t c = 4, h = 5, w = 6, k = 2 * 3 * 2;
  std::vector<float> x(static_cast<size_t>(c * h * w));
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i)) + 0.1f;
  InputGram gram(geometry, k);
  ASSERT_TRUE(gram.Add(x.data(), {1, c, h, w}));
  ASSERT_EQ(gram.groups(), 2);
  // Direct: output rows (5 + 2 - 3) / 2 + 1 = 3, columns (6 + 1 - 3) / 1 + 1 = 5.
  for (int64_t g = 0; g < 2; ++g) {
    std::vector<double> expect(static_cast<size_t>(k * k), 0.0), sum(static_cast<size_t>(k), 0.0);
    for (int64_t oh = 0; oh < 3; ++oh) {
      for (int64_t ow = 0; ow < 5; ++ow) {
        std::vector<double> patch;
        for (int64_t ci = 0; ci < 2; ++ci) {
          for (int64_t a = 0; a < 3; ++a) {
            for (int64_t b = 0; b < 2; ++b) {
              const int64_t ih = oh * 2 - 1 + a, iw = ow - 0 + b * 2;
              const bool in = ih >= 0 && ih < h && iw >= 0 && iw < w;
              patch.push_back(in ? x[((g * 2 + ci) * h + ih) * w + iw] : 0.0);
            }
          }
        }
        for (int64_t i = 0; i < k; ++i) {
          sum[i] += patch[i];
          for (int64_t j = 0; j < k; ++j) expect[i * k + j] += patch[i] * patch[j];
        }
      }
    }
    for (int64_t i = 0; i < k; ++i) {
      EXPECT_NEAR(gram.Mean(g)[i], sum[i] / 15.0, 1e-6);
      for (int64_t j = i; j < k; ++j) EXPECT_NEAR(gram.gram(g).Block(0)[i * k + j], expect[i * k + j], 1e-5);
    }
  }
  EXPECT_FALSE(gram.Add(x.data(), {1, 3, h, w}));  // wrong channel count: refused, nothing added
}

}  // namespace
}  // namespace ptqkit
