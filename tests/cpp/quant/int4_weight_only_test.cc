// INT4 weight-only: the block Gram matrices, the AWQ-clip search checked against a brute-force
// output error on explicit activations, target selection, and the graph rewrite.
#include "quant/formats/blocked_weight_search.h"
#include "quant/placement/placement.h"
#include "quant/rewrite/qdq_rewrite.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "onnx/graph_builder.h"
#include "quant/formats/numerics.h"
#include "ptqkit/error.h"
#include "quant_test_support.h"

namespace ptqkit {
namespace {

TEST(BlockGram, EqualsXtXOnEachDiagonalBlock) {
  const int64_t k = 10, block = 4, rows = 13;
  std::vector<float> x = Normal(static_cast<size_t>(rows * k), 1);
  x[5] = std::numeric_limits<float>::quiet_NaN();  // counts as 0
  BlockGram g(k, block);
  g.AddRows(x.data(), 6);
  g.AddRows(x.data() + 6 * k, rows - 6);  // batches add up
  EXPECT_EQ(g.rows(), rows);
  EXPECT_EQ(g.num_blocks(), 3);
  for (int64_t b = 0; b < 3; ++b) {
    const int64_t len = std::min(block, k - b * block);
    for (int64_t i = 0; i < len; ++i) {
      for (int64_t j = i; j < len; ++j) {
        double want = 0;
        for (int64_t r = 0; r < rows; ++r) {
          const float a = x[r * k + b * block + i], c = x[r * k + b * block + j];
          want += (std::isnan(a) ? 0.0 : a) * (std::isnan(c) ? 0.0 : c);
        }
        EXPECT_NEAR(g.Block(b)[i * block + j], want, 1e-9) << b << " " << i << " " << j;
      }
    }
  }
}

// Sum over rows of (x . (qdq(w) - w))^2 for one output column, computed directly.
double DirectError(const std::vector<float>& x, int64_t rows, int64_t k, const std::vector<float>& w_col,
                   const std::vector<float>& wq_col) {
  double e = 0;
  for (int64_t r = 0; r < rows; ++r) {
    double d = 0;
    for (int64_t j = 0; j < k; ++j) d += static_cast<double>(x[r * k + j]) * (wq_col[j] - w_col[j]);
    e += d * d;
  }
  return e;
}

TEST(AwqClip, PicksTheAlphaWithTheLeastOutputErrorPerBlock) {
  // Activations with a few strong channels (as in real models) and weights with outliers, so
  // clipping pays off in some blocks and not in others.
  const int64_t k = 12, n = 5, block = 4, rows = 64;
  std::vector<float> x = Normal(static_cast<size_t>(rows * k), 2);
  for (int64_t r = 0; r < rows; ++r) x[r * k + 3] *= 8.0f;
  std::vector<float> w = Normal(static_cast<size_t>(k * n), 3, 0.1f);  // MatMul [K, N]
  w[1 * n + 2] = 0.9f;
  w[6 * n + 0] = -0.7f;
  BlockGram g(k, block);
  g.AddRows(x.data(), rows);
  for (bool zp : {false, true}) {
    BlockedWeightSearch o;
    o.block_size = block;
    o.zero_point = zp;
    const BlockedWeight awq = QuantizeBlockedWeight(w, {k, n}, 0, &g, o);
    const BlockedWeight rtn = QuantizeBlockedWeight(w, {k, n}, 0, nullptr, o);
    EXPECT_EQ(rtn.clipped_blocks, 0);
    EXPECT_GT(awq.clipped_blocks, 0);
    for (int64_t c = 0; c < n; ++c) {
      for (int64_t b = 0; b < 3; ++b) {
        // Brute force over the same alphas, error on explicit rows of this block only.
        std::vector<float> xb(static_cast<size_t>(rows * block)), wb(block);
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t j = 0; j < block; ++j) xb[r * block + j] = x[r * k + b * block + j];
        for (int64_t j = 0; j < block; ++j) wb[j] = w[(b * block + j) * n + c];
        double best = 1e300;
        float best_scale = 0;
        for (int s = 0; s <= 10; ++s) {
          const float alpha = static_cast<float>(1.0 - 0.05 * s);
          const Int4BlockParams p = BlockParams(wb.data(), 1, block, alpha, zp, kMinScale);
          std::vector<float> wq(block);
          for (int64_t j = 0; j < block; ++j) wq[j] = QuantDequant(wb[j], p, zp);
          const double e = DirectError(xb, rows, block, wb, wq);
          if (e < best * (1 - 1e-9)) best = e, best_scale = p.scale;
        }
        EXPECT_FLOAT_EQ(awq.scales[b * n + c], best_scale) << "zp " << zp << " column " << c << " block " << b;
      }
    }
  }
}

TEST(AwqClip, DoesNotDependOnTheThreadCountAndNeverLosesToRtn) {
  const int64_t k = 64, n = 48, rows = 40;
  std::vector<float> x = Normal(static_cast<size_t>(rows * k), 4);
  const std::vector<float> w = Normal(static_cast<size_t>(k * n), 5, 0.05f);  // Gemm transB [N, K] view
  BlockGram g(k, 16);
  g.AddRows(x.data(), rows);
  BlockedWeightSearch o;
  o.block_size = 16;
  const BlockedWeight one = QuantizeBlockedWeight(w, {n, k}, 1, &g, o);
  o.threads = 7;
  const BlockedWeight many = QuantizeBlockedWeight(w, {n, k}, 1, &g, o);
  EXPECT_EQ(one.packed, many.packed);
  EXPECT_EQ(one.scales, many.scales);
  EXPECT_EQ(one.scale_shape, (std::vector<int64_t>{n, 4}));
  const BlockedWeight rtn = QuantizeBlockedWeight(w, {n, k}, 1, nullptr, o);
  // Total output error over the rows: the search never does worse than RTN.
  auto total = [&](const BlockedWeight& q) {
    const std::vector<int8_t> v = UnpackInt4(q.packed, n * k);
    double e = 0;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < n; ++c) {
        double d = 0;
        for (int64_t j = 0; j < k; ++j) d += x[r * k + j] * (v[c * k + j] * q.scales[c * 4 + j / 16] - w[c * k + j]);
        e += d * d;
      }
    return e;
  };
  EXPECT_LT(total(one), total(rtn));
}

onnx::ModelProto PlanModel() {
  GraphBuilder b;
  b.Input("x", {-1, 32}).Weight("w_mm", {32, 24}).Weight("w_gemm", {16, 24}).Weight("w_ta", {32, 8});
  b.ConstantWeight("w_const", {16, 8}).Weight("bias", {16}).Weight("w_rank1", {8});
  b.Node("MatMul", {"x", "w_mm"}, {"h1"}, "mm");
  b.Node("Gemm", {"h1", "w_gemm", "bias"}, {"h2"}, "gemm_tb", {{"transB", {1}}});
  b.Node("MatMul", {"h2", "w_const"}, {"h3"}, "mm_const");
  b.Node("Gemm", {"x", "w_ta"}, {"h4"}, "gemm_ta", {{"transA", {1}}});
  b.Node("Transpose", {"h1"}, {"h1t"}, "t");
  b.Node("MatMul", {"h1", "h1t"}, {"h5"}, "mm_act");
  b.Node("MatMul", {"h3", "w_rank1"}, {"h6"}, "mm_rank1");
  b.Output("h3").Output("h6");
  return b.Build(21);
}

// The weight-only placement profile of a format (what int4, nvfp4 and mxfp8 plan).
Placement PlanWeightOnly(const GraphIndex& index, PlacementOptions options = {}) {
  options.format = &FindFormat("int4", "--quantize_mode");
  return PlanPlacement(index, options);
}

TEST(WeightOnlyPlacement, TakesConstantRank2WeightsAndSaysWhyOthersStayFloat) {
  const onnx::ModelProto m = PlanModel();
  const GraphIndex index(m.graph());
  const Placement plan = PlanWeightOnly(index);
  ASSERT_EQ(plan.tensors.size(), 3u);
  std::map<std::string, const QuantizedTensor*> by_weight;
  for (const auto& q : plan.tensors) {
    by_weight[q.tensor] = &q;
    EXPECT_TRUE(q.is_weight);
    EXPECT_EQ(q.axis, -1) << "blocked, not per channel";
    ASSERT_EQ(q.uses.size(), 1u);
    EXPECT_EQ(q.uses[0].input, 1);
  }
  ASSERT_TRUE(by_weight.count("w_mm") && by_weight.count("w_gemm") && by_weight.count("w_const"));
  EXPECT_EQ(by_weight["w_mm"]->block_axis, 0);
  EXPECT_EQ(by_weight["w_gemm"]->block_axis, 1);  // transB: [N, K]
  EXPECT_EQ(index.node(by_weight["w_const"]->uses[0].node).name(), "mm_const");
  EXPECT_EQ(plan.quantized_nodes.size(), 3u);
  std::map<std::string, std::string> why;
  for (const auto& [node, reason] : plan.float_reasons) why[index.node(node).name()] = reason;
  EXPECT_NE(why["gemm_ta"].find("transA"), std::string::npos);
  EXPECT_NE(why["mm_act"].find("not a constant"), std::string::npos);
  EXPECT_NE(why["mm_rank1"].find("rank 1"), std::string::npos);
  EXPECT_TRUE(plan.ActivationTensors().empty());
  PlacementOptions selectors;
  selectors.op_types_to_exclude = {"Gemm"};
  selectors.nodes_to_exclude = {"mm"};
  const Placement excluded = PlanWeightOnly(index, selectors);
  ASSERT_EQ(excluded.tensors.size(), 1u);
  EXPECT_EQ(excluded.tensors[0].tensor, "w_const");
}

TEST(WeightOnlyPlacement, OneEntryPerWeightSharedByItsConsumers) {
  GraphBuilder b;
  b.Input("x", {-1, 16}).Input("y", {-1, 16}).Weight("w", {16, 8});
  b.Node("MatMul", {"x", "w"}, {"hx"}, "mm_x").Node("MatMul", {"y", "w"}, {"hy"}, "mm_y");
  b.Output("hx").Output("hy");
  const onnx::ModelProto m = b.Build(21);
  const GraphIndex index(m.graph());
  const Placement plan = PlanWeightOnly(index);
  ASSERT_EQ(plan.tensors.size(), 1u);
  EXPECT_EQ(plan.tensors[0].uses.size(), 2u);
}

TEST(Int4Rewrite, StoresPackedInt4WithABlockedDequantizeLinear) {
  onnx::ModelProto m = PlanModel();
  const GraphIndex index(m.graph());
  const Placement plan = PlanWeightOnly(index);
  RewriteOptions o;
  o.format = &FindFormat("int4", "--quantize_mode");
  o.blocked.weight.block_size = 10;  // K = 32 and 24 and 16: short last blocks
  o.blocked.weight.zero_point = true;
  const RewriteStats stats = InsertQdq(&m, plan, {}, o);
  EXPECT_EQ(stats.weight_tensors, 3);
  EXPECT_EQ(stats.qdq_pairs, 3);
  EXPECT_EQ(stats.blocked_nodes, 3);
  std::map<std::string, const onnx::TensorProto*> inits;
  for (const auto& t : m.graph().initializer()) inits[t.name()] = &t;
  EXPECT_FALSE(inits.count("w_mm"));    // float weights nothing reads are gone
  EXPECT_FALSE(inits.count("w_gemm"));
  EXPECT_TRUE(inits.count("w_ta"));     // untouched
  ASSERT_TRUE(inits.count("w_mm_uint4"));
  EXPECT_EQ(inits["w_mm_uint4"]->data_type(), onnx::TensorProto::UINT4);
  EXPECT_EQ(inits["w_mm_uint4"]->raw_data().size(), 32u * 24u / 2u);
  EXPECT_EQ(TensorShape(*inits["w_mm_scale"]), (std::vector<int64_t>{4, 24}));
  EXPECT_EQ(TensorShape(*inits["w_gemm_scale"]), (std::vector<int64_t>{16, 3}));
  EXPECT_EQ(TensorShape(*inits["w_gemm_zero_point"]), (std::vector<int64_t>{16, 3}));
  int constants = 0, dqs = 0, first_other = -1;
  for (int i = 0; i < m.graph().node_size(); ++i) {
    const auto& n = m.graph().node(i);
    constants += n.op_type() == "Constant";
    if (n.op_type() != "DequantizeLinear") {
      if (first_other < 0) first_other = i;
      continue;
    }
    ++dqs;
    EXPECT_EQ(IntAttribute(n, "block_size", 0), 10);
    // The DQs of initializers are listed before every other node (ONNX Runtime then dequantizes
    // each weight when its consumer is reached); each consumer comes later and reads it as input B.
    if (n.input(0) != "w_const_uint4") {
      EXPECT_EQ(first_other, -1) << n.name();
    }
    int readers = 0;
    for (int j = i + 1; j < m.graph().node_size(); ++j) {
      const auto& later = m.graph().node(j);
      readers += later.input_size() > 1 && later.input(1) == n.output(0);
    }
    EXPECT_EQ(readers, 1) << n.name();
  }
  EXPECT_EQ(dqs, 3);
  EXPECT_EQ(constants, 0);  // the Constant weight was replaced too
}

}  // namespace
}  // namespace ptqkit
