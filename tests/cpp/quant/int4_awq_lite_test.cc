// INT4 awq_lite: per input channel scaling chosen on the block Gram matrices, then the clip search
// on the scaled weight. Checks the channel magnitudes the capture collects, the scaled Gram, the scales' normalisation, the modelled error against a
// brute-force output error on explicit rows, the choice on an activation-outlier case, thread
// independence, and the rewrite's Mul(activation, 1/s).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "onnx/graph_builder.h"
#include "onnx/graph_index.h"
#include "quant/formats/blocked_weight_search.h"
#include "quant/placement/placement.h"
#include "quant/rewrite/qdq_rewrite.h"
#include "quant/formats/numerics.h"
#include "quant_test_support.h"

namespace ptqkit {
namespace {

// Rows of K activations where channel `hot` is `gain` times larger than the others.
std::vector<float> OutlierRows(int64_t rows, int64_t k, int64_t hot, float gain, uint64_t seed) {
  std::vector<float> x = Normal(static_cast<size_t>(rows * k), seed);
  for (int64_t r = 0; r < rows; ++r) x[static_cast<size_t>(r * k + hot)] *= gain;
  return x;
}

// Brute force: sum over rows and output columns of (x . (w_eff - w))^2 for a MatMul weight [K, N],
// the effective weight being diag(inv) * RTN(diag(s) W) with RTN blocks of `block` along K.
double DirectScaledError(const std::vector<float>& x, int64_t rows, const std::vector<float>& w, int64_t k, int64_t n,
                         int64_t block, const std::vector<float>& s, bool zp) {
  std::vector<double> dw(static_cast<size_t>(k * n));
  for (int64_t c = 0; c < n; ++c) {
    for (int64_t k0 = 0; k0 < k; k0 += block) {
      const int64_t len = std::min(block, k - k0);
      std::vector<float> ws(static_cast<size_t>(len));
      for (int64_t j = 0; j < len; ++j) ws[j] = w[(k0 + j) * n + c] * s[k0 + j];
      const Int4BlockParams p = BlockParams(ws.data(), 1, len, 1.0f, zp, kMinScale);
      for (int64_t j = 0; j < len; ++j) {
        const float inv = 1.0f / s[k0 + j];
        dw[(k0 + j) * n + c] = static_cast<double>(inv) * QuantDequant(ws[j], p, zp) - w[(k0 + j) * n + c];
      }
    }
  }
  double e = 0;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < n; ++c) {
      double d = 0;
      for (int64_t j = 0; j < k; ++j) d += static_cast<double>(x[r * k + j]) * dw[j * n + c];
      e += d * d;
    }
  }
  return e;
}

TEST(AwqLite, GramCollectsMeanAbsolutePerChannel) {
  const int64_t k = 6, rows = 9;
  std::vector<float> x = Normal(static_cast<size_t>(rows * k), 11);
  x[4] = std::numeric_limits<float>::infinity();  // counts as 0, as in the Gram
  BlockGram a(k, 4), b(k, 4);
  a.AddRows(x.data(), 5);
  b.AddRows(x.data() + 5 * k, rows - 5);
  a.Merge(b);
  const std::vector<double> m = a.MeanAbs();
  for (int64_t j = 0; j < k; ++j) {
    double want = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const float v = x[r * k + j];
      want += std::isfinite(v) ? std::fabs(v) : 0.0;
    }
    EXPECT_NEAR(m[j], want / rows, 1e-12) << j;
  }
  EXPECT_EQ(BlockGram(3, 3).MeanAbs(), (std::vector<double>{0, 0, 0}));
  // Scaled(f) is the Gram of the rows with channel j multiplied by f[j].
  const std::vector<float> f = {0.5f, 2.0f, 1.0f, 4.0f, 0.25f, 3.0f};
  std::vector<float> xf(x.size());
  for (size_t e = 0; e < x.size(); ++e) xf[e] = x[e] * f[e % k];
  BlockGram direct(k, 4);
  direct.AddRows(xf.data(), rows);
  const BlockGram scaled = a.Scaled(f);
  for (int64_t blk = 0; blk < 2; ++blk)
    for (int64_t i = 0; i < 16; ++i)
      if (i / 4 <= i % 4 && (blk == 0 || (i / 4 < 2 && i % 4 < 2))) {
        EXPECT_NEAR(scaled.Block(blk)[i], direct.Block(blk)[i], 1e-6 * (1 + std::fabs(direct.Block(blk)[i])));
      }
  for (int64_t j = 0; j < k; ++j) EXPECT_NEAR(scaled.MeanAbs()[j], direct.MeanAbs()[j], 1e-6);  // x * f rounded to float
}

TEST(AwqLite, InputScalesAreNormalisedPowersWithGuards) {
  const std::vector<double> m = {4.0, 1.0, 0.25, 0.0, std::numeric_limits<double>::quiet_NaN()};
  EXPECT_EQ(AwqLiteInputScales(m, 0.0), std::vector<float>(5, 1.0f));
  EXPECT_EQ(AwqLiteInputScales({0.0, 0.0}, 0.5), std::vector<float>(2, 1.0f));
  const std::vector<float> s = AwqLiteInputScales(m, 0.5);
  // Zero and NaN magnitudes are floored at 1e-4 * max = 4e-4: p = {2, 1, 0.5, 0.02, 0.02},
  // normalised by sqrt(2 * 0.02) = 0.2.
  EXPECT_FLOAT_EQ(s[0], 10.0f);
  EXPECT_FLOAT_EQ(s[1], 5.0f);
  EXPECT_FLOAT_EQ(s[2], 2.5f);
  EXPECT_FLOAT_EQ(s[3], 0.1f);
  EXPECT_FLOAT_EQ(s[4], 0.1f);
}

TEST(AwqLite, ModelledErrorMatchesBruteForceOnEveryAlpha) {
  const int64_t k = 20, n = 6, rows = 30;
  const std::vector<float> x = OutlierRows(rows, k, 5, 6.0f, 12);
  const std::vector<float> w = Normal(static_cast<size_t>(k * n), 13, 0.1f);
  for (bool zp : {false, true}) {
    BlockedWeightSearch o;
    o.zero_point = zp;
    o.awq_lite = true;
    // One block spanning K: the block-diagonal Gram is the full X^T X, so the modelled error is
    // exactly the output error on the rows.
    BlockedWeightSearch full = o;
    full.block_size = -1;
    BlockGram gk(k, k);
    gk.AddRows(x.data(), rows);
    const BlockedWeight qk = QuantizeBlockedWeight(w, {k, n}, 0, &gk, full);
    for (int t = 0; t <= kAwqLiteAlphaSteps; ++t) {
      const std::vector<float> s = AwqLiteInputScales(gk.MeanAbs(), static_cast<double>(t) / kAwqLiteAlphaSteps);
      const double want = DirectScaledError(x, rows, w, k, n, k, s, zp);
      EXPECT_NEAR(qk.awq_lite_errors[t], want, 1e-9 * want + 1e-12) << "zp " << zp << " t " << t;
    }
  }
}

TEST(AwqLite, BlockDiagonalErrorEqualsTheSumOfPerBlockBruteForce) {
  // With several blocks, the modelled error is the sum over blocks of the output error of each
  // block's K-slice alone (the cross-block terms of X^T X are left out).
  const int64_t k = 20, n = 5, block = 8, rows = 25;
  const std::vector<float> x = OutlierRows(rows, k, 17, 5.0f, 21);
  const std::vector<float> w = Normal(static_cast<size_t>(k * n), 22, 0.1f);
  BlockGram g(k, block);
  g.AddRows(x.data(), rows);
  BlockedWeightSearch o;
  o.block_size = block;
  o.awq_lite = true;
  const BlockedWeight q = QuantizeBlockedWeight(w, {k, n}, 0, &g, o);
  for (int t : {0, 7, 20}) {
    const std::vector<float> s = AwqLiteInputScales(g.MeanAbs(), static_cast<double>(t) / kAwqLiteAlphaSteps);
    double want = 0;
    for (int64_t k0 = 0; k0 < k; k0 += block) {
      const int64_t len = std::min(block, k - k0);
      std::vector<float> xb(static_cast<size_t>(rows * len)), wb(static_cast<size_t>(len * n)), sb(len);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < len; ++j) xb[r * len + j] = x[r * k + k0 + j];
      for (int64_t j = 0; j < len; ++j) {
        sb[j] = s[k0 + j];
        for (int64_t c = 0; c < n; ++c) wb[j * n + c] = w[(k0 + j) * n + c];
      }
      want += DirectScaledError(xb, rows, wb, len, n, len, sb, false);
    }
    EXPECT_NEAR(q.awq_lite_errors[t], want, 1e-9 * want) << t;
  }
}

TEST(AwqLite, OutlierChannelGetsScaledAndBeatsRtn) {
  // One input channel carries ~50x the activation of the others; its weights are ordinary, so
  // RTN rounds them as coarsely as the rest and the error they cause is amplified 50x.
  const int64_t k = 32, n = 16, block = 16, rows = 64;
  const std::vector<float> x = OutlierRows(rows, k, 3, 50.0f, 31);
  const std::vector<float> w = Normal(static_cast<size_t>(k * n), 32, 0.1f);
  BlockGram g(k, block);
  g.AddRows(x.data(), rows);
  BlockedWeightSearch o;
  o.block_size = block;
  o.awq_lite = true;
  const BlockedWeight q = QuantizeBlockedWeight(w, {k, n}, 0, &g, o);
  EXPECT_GT(q.awq_lite_alpha, 0.0);
  ASSERT_EQ(q.activation_scales.size(), static_cast<size_t>(k));
  const int best = static_cast<int>(std::lround(q.awq_lite_alpha * kAwqLiteAlphaSteps));
  for (double e : q.awq_lite_errors) EXPECT_GE(e, q.awq_lite_errors[best]);
  EXPECT_LT(q.awq_lite_errors[best], 0.8 * q.awq_lite_errors[0]);  // [0] is RTN
  // The outlier channel is scaled up in the weight, so its activation factor is the smallest.
  for (int64_t j = 0; j < k; ++j) {
    if (j != 3) {
      EXPECT_LT(q.activation_scales[3], q.activation_scales[j]);
    }
  }
  // The stored weight is diag(s) W (s = 1 / activation_scales) through the clip search on the
  // Gram of x * (1/s).
  const std::vector<float> s = AwqLiteInputScales(g.MeanAbs(), q.awq_lite_alpha);
  for (int64_t j = 0; j < k; ++j) EXPECT_EQ(q.activation_scales[j], 1.0f / s[j]);
  std::vector<float> scaled(w.size());
  for (int64_t j = 0; j < k; ++j)
    for (int64_t c = 0; c < n; ++c) scaled[j * n + c] = w[j * n + c] * s[j];
  BlockedWeightSearch clip = o;
  clip.awq_lite = false;
  const BlockGram scaled_gram = g.Scaled(q.activation_scales);
  const BlockedWeight want = QuantizeBlockedWeight(scaled, {k, n}, 0, &scaled_gram, clip);
  EXPECT_EQ(q.packed, want.packed);
  EXPECT_EQ(q.scales, want.scales);
  // And the real output error on the rows agrees with the model's verdict.
  EXPECT_LT(DirectScaledError(x, rows, w, k, n, block, s, false),
            DirectScaledError(x, rows, w, k, n, block, std::vector<float>(k, 1.0f), false));
}

TEST(AwqLite, NoActivationEnergyKeepsRtnAndThreadsDoNotMatter) {
  const int64_t k = 24, n = 40, rows = 10;
  const std::vector<float> w = Normal(static_cast<size_t>(k * n), 41, 0.1f);
  BlockedWeightSearch o;
  o.block_size = 8;
  o.awq_lite = true;
  BlockGram zero(k, 8);
  zero.AddRows(std::vector<float>(static_cast<size_t>(rows * k), 0.0f).data(), rows);
  const BlockedWeight none = QuantizeBlockedWeight(w, {n, k}, 1, &zero, o);  // Gemm transB view
  EXPECT_EQ(none.awq_lite_alpha, 0.0);  // every error is 0: ties keep alpha 0
  EXPECT_TRUE(none.activation_scales.empty());
  EXPECT_EQ(none.packed, QuantizeBlockedWeight(w, {n, k}, 1, nullptr, o).packed);

  const std::vector<float> x = OutlierRows(rows, k, 10, 20.0f, 42);
  BlockGram g(k, 8);
  g.AddRows(x.data(), rows);
  const BlockedWeight one = QuantizeBlockedWeight(w, {n, k}, 1, &g, o);
  o.threads = 5;
  const BlockedWeight many = QuantizeBlockedWeight(w, {n, k}, 1, &g, o);
  EXPECT_GT(one.awq_lite_alpha, 0.0);
  EXPECT_EQ(one.awq_lite_errors, many.awq_lite_errors);
  EXPECT_EQ(one.packed, many.packed);
  EXPECT_EQ(one.scales, many.scales);
  EXPECT_EQ(one.activation_scales, many.activation_scales);
}

TEST(AwqLite, RewriteMultipliesEachConsumersActivationByOneOverS) {
  // x feeds two MatMuls with their own weights (each gets its own Mul and scales), then a Gemm
  // transB on another activation.
  GraphBuilder b;
  b.Input("x", {-1, 16}).Weight("wa", {16, 8}).Weight("wb", {16, 4}).Weight("wc", {5, 8});
  b.Node("MatMul", {"x", "wa"}, {"ha"}, "mm_a").Node("MatMul", {"x", "wb"}, {"hb"}, "mm_b");
  b.Node("Gemm", {"ha", "wc"}, {"hc"}, "gemm_c", {{"transB", {1}}});
  b.Output("hb").Output("hc");
  onnx::ModelProto m = b.Build(21);
  const int64_t rows = 32;
  const std::vector<float> x = OutlierRows(rows, 16, 2, 40.0f, 51);
  const std::vector<float> ha = OutlierRows(rows, 8, 6, 40.0f, 52);
  std::map<std::string, BlockGram> grams;
  grams.emplace("x", BlockGram(16, 8)).first->second.AddRows(x.data(), rows);
  grams.emplace("ha", BlockGram(8, 8)).first->second.AddRows(ha.data(), rows);
  std::map<std::string, std::vector<float>> weights;
  for (const auto& t : m.graph().initializer()) weights[t.name()] = TensorToFloats(t);
  const GraphIndex index(m.graph());
  PlacementOptions weight_only;
  weight_only.format = &FindFormat("int4", "--quantize_mode");
  const Placement plan = PlanPlacement(index, weight_only);
  RewriteOptions o;
  o.format = weight_only.format;
  o.blocked.weight.block_size = 8;
  o.blocked.weight.awq_lite = true;
  o.blocked.grams = &grams;
  const RewriteStats stats = InsertQdq(&m, plan, {}, o);
  EXPECT_EQ(stats.weight_tensors, 3);
  EXPECT_EQ(stats.scaled_weights, 3);
  EXPECT_EQ(stats.scale_muls, 3);

  std::map<std::string, const onnx::TensorProto*> inits;
  for (const auto& t : m.graph().initializer()) inits[t.name()] = &t;
  std::map<std::string, int> position;
  for (int i = 0; i < m.graph().node_size(); ++i) position[m.graph().node(i).name()] = i;
  struct Case {
    std::string node, weight, activation;
    std::vector<int64_t> shape;
    int axis;
  };
  for (const Case& c : {Case{"mm_a", "wa", "x", {16, 8}, 0}, Case{"mm_b", "wb", "x", {16, 4}, 0},
                        Case{"gemm_c", "wc", "ha", {5, 8}, 1}}) {
    SCOPED_TRACE(c.node);
    const auto& node = m.graph().node(position.at(c.node));
    const onnx::NodeProto* mul = nullptr;
    for (const auto& n : m.graph().node()) {
      if (n.op_type() == "Mul" && n.output(0) == node.input(0)) mul = &n;
    }
    ASSERT_NE(mul, nullptr);
    EXPECT_EQ(mul->input(0), c.activation);
    EXPECT_LT(position.at(mul->name()), position.at(c.node));
    const onnx::TensorProto& inv = *inits.at(mul->input(1));
    EXPECT_EQ(inv.data_type(), onnx::TensorProto::FLOAT);
    EXPECT_EQ(TensorShape(inv), (std::vector<int64_t>{c.shape[static_cast<size_t>(c.axis)]}));
    BlockedWeightSearch wo = o.blocked.weight;
    const BlockedWeight want =
        QuantizeBlockedWeight(weights.at(c.weight), c.shape, c.axis, &grams.at(c.activation), wo);
    EXPECT_GT(want.awq_lite_alpha, 0.0);
    EXPECT_EQ(TensorToFloats(inv), want.activation_scales);
    // The weight's INT4 initializer is the scaled weight's.
    const std::string& q_name = inits.count(c.weight + "_int4") ? c.weight + "_int4" : "";
    ASSERT_FALSE(q_name.empty());
    EXPECT_EQ(inits.at(q_name)->raw_data(), want.packed);
  }
  // mm_a and mm_b read x through different Muls with different factors.
  EXPECT_NE(m.graph().node(position.at("mm_a")).input(0), m.graph().node(position.at("mm_b")).input(0));
}

}  // namespace
}  // namespace ptqkit
