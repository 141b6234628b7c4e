// Bit-exact cross-check of quant/int4_numerics against ONNX Runtime's CPU kernels at opset 21: a
// one-node model (blocked DequantizeLinear reading a packed INT4/UINT4 initializer, or blocked
// QuantizeLinear writing one) is built here with the ONNX protobuf, and every output element or
// byte is compared with the scalar reference. Shapes include K not a multiple of the block, so
// the short last block is covered.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <onnxruntime_cxx_api.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "onnx/float16.h"
#include "quant/formats/int4_numerics.h"

namespace ptqkit {
namespace {

constexpr int32_t kFloat = 1;
constexpr int32_t kFloat16 = 10;
constexpr int32_t kUint4 = 21;
constexpr int32_t kInt4 = 22;

struct Case {
  std::vector<int64_t> shape;
  int axis;
  int64_t block;
};

Ort::Env& Env() {
  static Ort::Env env(ORT_LOGGING_LEVEL_WARNING, "int4_ort_test");
  return env;
}

void AddInit(onnx::GraphProto* g, const std::string& name, int32_t type, const std::vector<int64_t>& dims,
             const std::string& raw) {
  onnx::TensorProto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(type);
  for (auto d : dims) t->add_dims(d);
  t->set_raw_data(raw);
}

void AddAttrs(onnx::NodeProto* n, int axis, int64_t block) {
  for (auto [name, value] : {std::pair<const char*, int64_t>{"axis", axis}, {"block_size", block}}) {
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(value);
  }
}

onnx::ModelProto NewModel() {
  onnx::ModelProto m;
  m.set_ir_version(10);  // INT4/UINT4 types.
  m.set_producer_name("ptqkit-int4-test");
  m.add_opset_import()->set_version(21);
  m.mutable_graph()->set_name("one_node");
  return m;
}

void SetValue(onnx::ValueInfoProto* v, const std::string& name, int32_t type) {
  v->set_name(name);
  v->mutable_type()->mutable_tensor_type()->set_elem_type(type);
}

Ort::Session NewSession(const onnx::ModelProto& m) {
  const std::string bytes = m.SerializeAsString();
  Ort::SessionOptions options;
  options.SetIntraOpNumThreads(1);
  // No constant folding: the DequantizeLinear kernel itself must run.
  options.SetGraphOptimizationLevel(GraphOptimizationLevel::ORT_DISABLE_ALL);
  return Ort::Session(Env(), bytes.data(), bytes.size(), options);
}

// y = DequantizeLinear(q, scale[, zp], axis, block) with every input an initializer.
std::vector<float> OrtDequantize(const std::string& q_packed, int32_t q_type, const std::vector<float>& scales,
                                 const std::string& zp_packed, const Case& c, const BlockedLayout& layout,
                                 bool half_scales) {
  onnx::ModelProto m = NewModel();
  onnx::GraphProto* g = m.mutable_graph();
  const std::vector<int64_t> scale_shape = layout.ScaleShape(c.shape, c.axis);
  AddInit(g, "q", q_type, c.shape, q_packed);
  if (half_scales) {
    std::vector<uint16_t> h;
    for (float s : scales) h.push_back(FloatToHalf(s));
    AddInit(g, "scale", kFloat16, scale_shape, std::string(reinterpret_cast<const char*>(h.data()), h.size() * 2));
  } else {
    AddInit(g, "scale", kFloat, scale_shape, std::string(reinterpret_cast<const char*>(scales.data()), scales.size() * 4));
  }
  onnx::NodeProto* n = g->add_node();
  n->set_op_type("DequantizeLinear");
  n->set_name("dq");
  n->add_input("q");
  n->add_input("scale");
  if (!zp_packed.empty()) {
    AddInit(g, "zp", q_type, scale_shape, zp_packed);
    n->add_input("zp");
  }
  n->add_output("y");
  AddAttrs(n, c.axis, c.block);
  SetValue(g->add_output(), "y", half_scales ? kFloat16 : kFloat);
  Ort::Session session = NewSession(m);
  const char* out_names[] = {"y"};
  auto outs = session.Run(Ort::RunOptions{nullptr}, nullptr, nullptr, 0, out_names, 1);
  const size_t count = outs[0].GetTensorTypeAndShapeInfo().GetElementCount();
  EXPECT_EQ(static_cast<int64_t>(count), layout.num_elements());
  std::vector<float> y(count);
  if (half_scales) {
    const auto* h = outs[0].GetTensorData<uint16_t>();
    for (size_t i = 0; i < count; ++i) y[i] = HalfToFloat(h[i]);
  } else {
    std::memcpy(y.data(), outs[0].GetTensorData<float>(), count * sizeof(float));
  }
  return y;
}

uint32_t Bits(float x) {
  uint32_t b;
  std::memcpy(&b, &x, sizeof(b));
  return b;
}

const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = {
      {{10, 3}, 0, 4},      // MatMul [K, N], K = 10: blocks 4 + 4 + 2
      {{256, 5}, 0, 128},   // exact blocks
      {{7, 9}, 1, 4},       // Gemm transB [N, K], K = 9: blocks 4 + 4 + 1
      {{3, 17, 6}, 1, 5},   // batched MatMul weight, blocked axis in the middle
      {{33, 31}, 0, 33},    // one block spanning K (block_size -1), odd element count
      {{5, 7}, 0, 16},      // block longer than K
  };
  return cases;
}

std::vector<float> RandomScales(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-12.0f, 3.0f);
  std::vector<float> s(static_cast<size_t>(n));
  for (auto& v : s) v = std::exp2(u(rng)) * (1.0f + static_cast<float>(rng() % 1000) / 997.0f);
  return s;
}

TEST(Int4OrtTest, BlockedDequantizeInt4MatchesOnnxRuntime) {
  uint64_t seed = 1;
  for (const Case& c : Cases()) {
    const BlockedLayout layout = MakeBlockedLayout(c.shape, c.axis, c.block);
    std::mt19937_64 rng(seed++);
    std::vector<int8_t> q(static_cast<size_t>(layout.num_elements()));
    for (size_t i = 0; i < q.size(); ++i) q[i] = static_cast<int8_t>(static_cast<int>(i < 16 ? i : rng() % 16) - 8);
    const std::vector<float> scales = RandomScales(layout.num_scales(), seed);
    const std::vector<float> y = OrtDequantize(PackInt4(q), kInt4, scales, "", c, layout, false);
    const std::vector<float> ours = DequantizeBlocked(std::vector<int>(q.begin(), q.end()), scales, {}, layout);
    ASSERT_EQ(y.size(), ours.size());
    for (size_t i = 0; i < y.size(); ++i) {
      ASSERT_EQ(Bits(ours[i]), Bits(y[i])) << "case K=" << layout.k << " block " << c.block << " element " << i;
    }
  }
}

TEST(Int4OrtTest, BlockedDequantizeUint4WithZeroPointsMatchesOnnxRuntime) {
  uint64_t seed = 100;
  for (const Case& c : Cases()) {
    const BlockedLayout layout = MakeBlockedLayout(c.shape, c.axis, c.block);
    std::mt19937_64 rng(seed++);
    std::vector<uint8_t> q(static_cast<size_t>(layout.num_elements()));
    for (auto& v : q) v = static_cast<uint8_t>(rng() % 16);
    std::vector<uint8_t> zp(static_cast<size_t>(layout.num_scales()));
    for (auto& v : zp) v = static_cast<uint8_t>(rng() % 16);
    const std::vector<float> scales = RandomScales(layout.num_scales(), seed);
    const std::vector<float> y = OrtDequantize(PackUint4(q), kUint4, scales, PackUint4(zp), c, layout, false);
    const std::vector<float> ours = DequantizeBlocked(std::vector<int>(q.begin(), q.end()), scales,
                                                      std::vector<int>(zp.begin(), zp.end()), layout);
    for (size_t i = 0; i < y.size(); ++i) {
      ASSERT_EQ(Bits(ours[i]), Bits(y[i])) << "case K=" << layout.k << " block " << c.block << " element " << i;
    }
  }
}

TEST(Int4OrtTest, Float16ScalesMatchOnnxRuntime) {
  // A float16 weight gets float16 scales; (q - zp) * scale is exact in float32 (4 + 11 bits), so
  // ONNX Runtime's float16 result is that product rounded once to float16.
  const Case c{{10, 6}, 0, 4};
  const BlockedLayout layout = MakeBlockedLayout(c.shape, c.axis, c.block);
  std::vector<int8_t> q(static_cast<size_t>(layout.num_elements()));
  for (size_t i = 0; i < q.size(); ++i) q[i] = static_cast<int8_t>(static_cast<int>(i * 7 % 16) - 8);
  std::vector<float> scales = RandomScales(layout.num_scales(), 7);
  for (auto& s : scales) s = HalfToFloat(FloatToHalf(s));
  const std::vector<float> y = OrtDequantize(PackInt4(q), kInt4, scales, "", c, layout, true);
  const std::vector<float> ours = DequantizeBlocked(std::vector<int>(q.begin(), q.end()), scales, {}, layout);
  for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(Bits(HalfToFloat(FloatToHalf(ours[i]))), Bits(y[i])) << i;
}

// ONNX Runtime's blocked QuantizeLinear (x a graph input, y packed INT4/UINT4) against ours.
std::string OrtQuantize(const std::vector<float>& x, const std::vector<float>& scales, const std::vector<uint8_t>& zp,
                        int32_t type, const Case& c, const BlockedLayout& layout) {
  onnx::ModelProto m = NewModel();
  onnx::GraphProto* g = m.mutable_graph();
  const std::vector<int64_t> scale_shape = layout.ScaleShape(c.shape, c.axis);
  AddInit(g, "scale", kFloat, scale_shape, std::string(reinterpret_cast<const char*>(scales.data()), scales.size() * 4));
  AddInit(g, "zp", type, scale_shape, type == kUint4 ? PackUint4(zp) : std::string((zp.size() + 1) / 2, '\0'));
  onnx::NodeProto* n = g->add_node();
  n->set_op_type("QuantizeLinear");
  n->set_name("q");
  n->add_input("x");
  n->add_input("scale");
  n->add_input("zp");
  n->add_output("y");
  AddAttrs(n, c.axis, c.block);
  SetValue(g->add_input(), "x", kFloat);
  for (auto d : c.shape) g->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
  SetValue(g->add_output(), "y", type);
  Ort::Session session = NewSession(m);
  Ort::MemoryInfo memory = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
  Ort::Value input = Ort::Value::CreateTensor<float>(memory, const_cast<float*>(x.data()), x.size(), c.shape.data(),
                                                     c.shape.size());
  const char* in_names[] = {"x"};
  const char* out_names[] = {"y"};
  auto outs = session.Run(Ort::RunOptions{nullptr}, in_names, &input, 1, out_names, 1);
  const auto* raw = static_cast<const char*>(outs[0].GetTensorRawData());
  return std::string(raw, static_cast<size_t>((layout.num_elements() + 1) / 2));
}

TEST(Int4OrtTest, BlockedQuantizeMatchesOnnxRuntime) {
  uint64_t seed = 200;
  for (const Case& c : Cases()) {
    const BlockedLayout layout = MakeBlockedLayout(c.shape, c.axis, c.block);
    std::vector<float> scales = RandomScales(layout.num_scales(), seed++);
    for (size_t i = 0; i < scales.size(); ++i) scales[i] = i % 3 ? scales[i] : 0.5f;  // Exact ties below.
    std::mt19937_64 rng(seed++);
    std::vector<uint8_t> zp(static_cast<size_t>(layout.num_scales()));
    for (auto& v : zp) v = static_cast<uint8_t>(rng() % 16);
    std::vector<float> x(static_cast<size_t>(layout.num_elements()));
    std::vector<size_t> scale_of(x.size());
    for (int64_t o = 0; o < layout.outer; ++o)
      for (int64_t j = 0; j < layout.k; ++j)
        for (int64_t i = 0; i < layout.inner; ++i) {
          const auto e = static_cast<size_t>((o * layout.k + j) * layout.inner + i);
          scale_of[e] = static_cast<size_t>((o * layout.num_blocks() + j / layout.block) * layout.inner + i);
          // Half-integers (ties, some beyond saturation) and random values up to +-20 steps.
          const float units = e % 2 ? static_cast<float>(static_cast<int>(rng() % 41) - 20) + 0.5f
                                    : std::normal_distribution<float>(0.0f, 8.0f)(rng);
          x[e] = units * scales[scale_of[e]];
        }
    std::vector<int8_t> ours_s(x.size());
    std::vector<uint8_t> ours_u(x.size());
    for (size_t e = 0; e < x.size(); ++e) {
      ours_s[e] = QuantizeInt4(x[e], scales[scale_of[e]]);
      ours_u[e] = QuantizeUint4(x[e], scales[scale_of[e]], zp[scale_of[e]]);
    }
    const std::string ort_s = OrtQuantize(x, scales, zp, kInt4, c, layout);
    const std::string ort_u = OrtQuantize(x, scales, zp, kUint4, c, layout);
    const std::vector<int8_t> got_s = UnpackInt4(ort_s, layout.num_elements());
    const std::vector<uint8_t> got_u = UnpackUint4(ort_u, layout.num_elements());
    for (size_t e = 0; e < x.size(); ++e) {
      ASSERT_EQ(int{ours_s[e]}, int{got_s[e]}) << "INT4 x=" << x[e] << " scale " << scales[scale_of[e]];
      ASSERT_EQ(int{ours_u[e]}, int{got_u[e]}) << "UINT4 x=" << x[e] << " zp " << int{zp[scale_of[e]]};
    }
    // Packing: our bytes equal ONNX Runtime's. With an odd count ONNX Runtime leaves the unused
    // high nibble of the last byte unspecified (seen non-zero), so that nibble is not compared;
    // ours is always 0 (tested in int4_numerics_test).
    std::string mine_s = PackInt4(ours_s), mine_u = PackUint4(ours_u);
    std::string theirs_s = ort_s, theirs_u = ort_u;
    if (layout.num_elements() % 2) {
      for (std::string* b : {&mine_s, &mine_u, &theirs_s, &theirs_u}) b->back() = static_cast<char>(b->back() & 0x0f);
    }
    EXPECT_EQ(mine_s, theirs_s);
    EXPECT_EQ(mine_u, theirs_u);
  }
}

}  // namespace
}  // namespace ptqkit
