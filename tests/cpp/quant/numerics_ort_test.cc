// Bit-exact cross-check of quant/numerics against ONNX Runtime's CPU kernels: a one-node model
// (QuantizeLinear or DequantizeLinear) is built here with the ONNX protobuf, run on test vectors,
// and every output element is compared with the scalar reference.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <onnxruntime_cxx_api.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "quant/formats/numerics.h"

namespace ptqkit {
namespace {

constexpr int32_t kFloat = 1;
constexpr int32_t kInt8 = 3;
constexpr int32_t kFloat8E4M3FN = 17;  // Written as a number: ONNX 1.12's enum predates FP8.
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

void SetTensorType(onnx::ValueInfoProto* value, const std::string& name, int32_t dtype,
                   const std::vector<int64_t>& shape) {
  value->set_name(name);
  auto* tensor = value->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(dtype);
  for (int64_t d : shape) tensor->mutable_shape()->add_dim()->set_dim_value(d);
}

// x -> op(x, scale, zero_point [, axis]) -> y. `scales` has one value (per tensor) or one per
// index of `axis`; zero points are 0 of `zp_dtype`.
std::string OneNodeModel(const std::string& op, int opset, int32_t x_dtype, int32_t y_dtype,
                         int32_t zp_dtype, const std::vector<int64_t>& shape,
                         const std::vector<float>& scales, int axis = -1000) {
  onnx::ModelProto model;
  model.set_ir_version(opset >= 19 ? 9 : 7);
  model.set_producer_name("ptqkit-numerics-test");
  model.add_opset_import()->set_version(opset);
  onnx::GraphProto* graph = model.mutable_graph();
  graph->set_name("one_node");
  const bool per_axis = axis != -1000;
  const std::vector<int64_t> param_shape =
      per_axis ? std::vector<int64_t>{static_cast<int64_t>(scales.size())} : std::vector<int64_t>{};

  onnx::TensorProto* scale = graph->add_initializer();
  scale->set_name("scale");
  scale->set_data_type(kFloat);
  for (int64_t d : param_shape) scale->add_dims(d);
  for (float s : scales) scale->add_float_data(s);

  onnx::TensorProto* zero_point = graph->add_initializer();
  zero_point->set_name("zero_point");
  zero_point->set_data_type(zp_dtype);
  for (int64_t d : param_shape) zero_point->add_dims(d);
  zero_point->set_raw_data(std::string(scales.size(), '\0'));  // One zero byte per element.

  onnx::NodeProto* node = graph->add_node();
  node->set_op_type(op);
  node->set_name("node");
  node->add_input("x");
  node->add_input("scale");
  node->add_input("zero_point");
  node->add_output("y");
  if (per_axis) {
    onnx::AttributeProto* attr = node->add_attribute();
    attr->set_name("axis");
    attr->set_type(onnx::AttributeProto::INT);
    attr->set_i(axis);
  }
  SetTensorType(graph->add_input(), "x", x_dtype, shape);
  SetTensorType(graph->add_output(), "y", y_dtype, shape);
  return model.SerializeAsString();
}

Ort::Env& Env() {
  static Ort::Env env(ORT_LOGGING_LEVEL_WARNING, "numerics_ort_test");
  return env;
}

// Runs the model on `x` (element type TIn) and returns y's bytes reinterpreted as TOut.
template <typename TIn, typename TOut>
std::vector<TOut> RunOneNode(const std::string& model_bytes, const std::vector<TIn>& x,
                      const std::vector<int64_t>& shape) {
  Ort::SessionOptions options;
  options.SetIntraOpNumThreads(1);
  options.SetGraphOptimizationLevel(GraphOptimizationLevel::ORT_DISABLE_ALL);
  Ort::Session session(Env(), model_bytes.data(), model_bytes.size(), options);
  Ort::MemoryInfo memory = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
  const ONNXTensorElementDataType in_type =
      std::is_same_v<TIn, float> ? ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT
      : std::is_same_v<TIn, int8_t> ? ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8
                                    : ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FN;
  Ort::Value input = Ort::Value::CreateTensor(memory, const_cast<TIn*>(x.data()),
                                              x.size() * sizeof(TIn), shape.data(), shape.size(),
                                              in_type);
  const char* input_names[] = {"x"};
  const char* output_names[] = {"y"};
  std::vector<Ort::Value> outputs =
      session.Run(Ort::RunOptions{nullptr}, input_names, &input, 1, output_names, 1);
  const auto info = outputs[0].GetTensorTypeAndShapeInfo();
  EXPECT_EQ(info.GetElementCount(), x.size());
  std::vector<TOut> y(x.size());
  std::memcpy(y.data(), outputs[0].GetTensorRawData(), y.size() * sizeof(TOut));
  return y;
}

uint32_t Bits(float x) {
  uint32_t b;
  std::memcpy(&b, &x, sizeof(b));
  return b;
}

float FromBits(uint32_t b) {
  float x;
  std::memcpy(&x, &b, sizeof(x));
  return x;
}

// Values that probe rounding, saturation and special cases for `scale`, plus random ones. The
// count is odd so ONNX Runtime's vector loops also leave a scalar tail.
std::vector<float> Int8TestVector(float scale, uint64_t seed) {
  std::vector<float> v = {0.0f, -0.0f, kInf, -kInf, std::numeric_limits<float>::max(),
                          -std::numeric_limits<float>::max(), 1e30f, -1e30f,
                          std::numeric_limits<float>::denorm_min(), -1e-40f,
                          std::numeric_limits<float>::min(), 1e-20f};
  for (int k = -135; k <= 135; ++k) {
    v.push_back((static_cast<float>(k) + 0.5f) * scale);  // Ties (exact for power-of-two scales).
    v.push_back(static_cast<float>(k) * scale);
    v.push_back(std::nextafter((static_cast<float>(k) + 0.5f) * scale, kInf));
    v.push_back(std::nextafter((static_cast<float>(k) + 0.5f) * scale, -kInf));
  }
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 60.0f * scale);
  for (int i = 0; i < 2001; ++i) v.push_back(normal(rng));
  for (int i = 0; i < 2001; ++i) {
    const float x = FromBits(static_cast<uint32_t>(rng()));  // Any bit pattern but NaN.
    v.push_back(std::isnan(x) ? 1.0f : x);
  }
  return v;
}

TEST(NumericsOrtTest, QuantizeInt8PerTensorMatchesOnnxRuntime) {
  for (float scale : {1.0f, 0.25f, 0.0173f, 0.3f, 3.7e-5f, 1234.5f}) {
    const std::vector<float> x = Int8TestVector(scale, 1);
    const std::vector<int64_t> shape = {static_cast<int64_t>(x.size())};
    const std::vector<int8_t> y = RunOneNode<float, int8_t>(
        OneNodeModel("QuantizeLinear", 13, kFloat, kInt8, kInt8, shape, {scale}), x, shape);
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_EQ(QuantizeInt8(x[i], scale), y[i])
          << "x = " << x[i] << " (" << std::hexfloat << x[i] << "), scale = " << scale;
    }
  }
}

TEST(NumericsOrtTest, QuantizeInt8PerAxisMatchesOnnxRuntime) {
  const std::vector<int64_t> shape = {7, 301};
  std::vector<float> x = Int8TestVector(0.5f, 2);
  x.resize(7 * 301, 0.0f);
  for (int axis : {0, 1}) {
    std::vector<float> scales(static_cast<size_t>(shape[axis]));
    std::mt19937_64 rng(axis);
    std::uniform_real_distribution<float> u(0.01f, 2.0f);
    for (float& s : scales) s = u(rng);
    scales[0] = 0.5f;
    const std::vector<int8_t> y = RunOneNode<float, int8_t>(
        OneNodeModel("QuantizeLinear", 13, kFloat, kInt8, kInt8, shape, scales, axis), x, shape);
    std::vector<int8_t> ours(x.size());
    QuantizeInt8PerChannel(x.data(), shape, axis, scales, ours.data());
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_EQ(ours[i], y[i]) << "axis " << axis << " element " << i << " x = " << x[i];
    }
  }
}

TEST(NumericsOrtTest, QuantizeInt8NaNMatchesOnnxRuntime) {
  // ONNX leaves NaN undefined; ONNX Runtime's vector and scalar-tail code must agree with us at
  // the start, inside vector blocks and in the tail, for short and long tensors.
  for (size_t size : {1, 3, 67, 1001}) {
    std::vector<float> x(size, 1.0f);
    for (size_t i = 0; i < size; i += 3) x[i] = (i % 2) ? -kNaN : kNaN;
    x[size - 1] = kNaN;
    const std::vector<int64_t> shape = {static_cast<int64_t>(x.size())};
    const std::vector<int8_t> y = RunOneNode<float, int8_t>(
        OneNodeModel("QuantizeLinear", 13, kFloat, kInt8, kInt8, shape, {0.5f}), x, shape);
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_EQ(QuantizeInt8(x[i], 0.5f), y[i]) << "size " << size << " element " << i;
    }
  }
}

TEST(NumericsOrtTest, DequantizeInt8MatchesOnnxRuntime) {
  std::vector<int8_t> q;
  for (int b = -128; b <= 127; ++b) q.push_back(static_cast<int8_t>(b));
  const std::vector<int64_t> shape = {static_cast<int64_t>(q.size())};
  for (float scale : {0.0173f, 3.7e-5f, 1234.5f}) {
    const std::vector<float> y = RunOneNode<int8_t, float>(
        OneNodeModel("DequantizeLinear", 13, kInt8, kFloat, kInt8, shape, {scale}), q, shape);
    for (size_t i = 0; i < q.size(); ++i) {
      ASSERT_EQ(Bits(DequantizeInt8(q[i], scale)), Bits(y[i])) << int{q[i]} << " * " << scale;
    }
  }
}

std::vector<float> Float8TestVector(uint64_t seed) {
  std::vector<float> v = {0.0f, -0.0f, kInf, -kInf, kNaN, -kNaN,
                          std::numeric_limits<float>::max(), std::numeric_limits<float>::min(),
                          std::numeric_limits<float>::denorm_min(), -1e-40f, 1e-20f};
  // Every FP8 value, the midpoints (ties) between neighbours, and their float32 neighbours.
  for (int b = 0; b < 256; ++b) {
    if ((b & 0x7f) == 0x7f) continue;
    const float a = Float8E4M3FNToFloat(static_cast<uint8_t>(b));
    v.push_back(a);
    if ((b & 0x7f) == 0x7e) continue;
    const float next = Float8E4M3FNToFloat(static_cast<uint8_t>(b + 1));
    const float mid = (a + next) / 2;  // Exact: needs one more mantissa bit than FP8 has.
    for (float m : {mid, std::nextafter(mid, kInf), std::nextafter(mid, -kInf)}) v.push_back(m);
  }
  // Around the saturation point: 448, the 448/480 midpoint 464, above.
  for (float x : {440.0f, 447.9f, 448.0f, 448.1f, 455.0f, 463.99f, 464.0f, 464.01f, 479.0f,
                  480.0f, 500.0f, 1e4f, 1e38f}) {
    v.push_back(x);
    v.push_back(-x);
  }
  // The subnormal range, in steps of a quarter unit (2^-11), and just below.
  for (int k = 0; k <= 40; ++k) {
    const float x = std::ldexp(static_cast<float>(k), -11);
    v.push_back(x);
    v.push_back(-x);
    v.push_back(std::nextafter(x, 0.0f));
  }
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 50.0f);
  for (int i = 0; i < 3001; ++i) v.push_back(normal(rng));
  for (int i = 0; i < 20001; ++i) v.push_back(FromBits(static_cast<uint32_t>(rng())));
  // Every float whose exponent lies near the FP8 range, with random mantissas.
  for (int e = -14; e <= 10; ++e) {
    for (int i = 0; i < 200; ++i) {
      v.push_back(std::ldexp(1.0f + static_cast<float>(rng() % (1u << 23)) * 0x1p-23f, e) *
                  ((i % 2) ? -1.0f : 1.0f));
    }
  }
  return v;
}

TEST(NumericsOrtTest, QuantizeFloat8MatchesOnnxRuntime) {
  for (float scale : {1.0f, 0.5f, 0.0173f, 3.0f}) {
    const std::vector<float> x = Float8TestVector(3);
    const std::vector<int64_t> shape = {static_cast<int64_t>(x.size())};
    const std::vector<uint8_t> y =
        RunOneNode<float, uint8_t>(OneNodeModel("QuantizeLinear", 19, kFloat, kFloat8E4M3FN,
                                         kFloat8E4M3FN, shape, {scale}),
                            x, shape);
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_EQ(int{QuantizeFloat8E4M3FN(x[i], scale)}, int{y[i]})
          << "x = " << x[i] << " (" << std::hexfloat << x[i] << "), scale = " << scale;
    }
  }
}

TEST(NumericsOrtTest, DecodeFloat8MatchesOnnxRuntime) {
  std::vector<uint8_t> q;
  for (int b = 0; b < 256; ++b) q.push_back(static_cast<uint8_t>(b));
  const std::vector<int64_t> shape = {static_cast<int64_t>(q.size())};
  const std::vector<float> y = RunOneNode<uint8_t, float>(
      OneNodeModel("DequantizeLinear", 19, kFloat8E4M3FN, kFloat, kFloat8E4M3FN, shape, {1.0f}),
      q, shape);
  for (size_t i = 0; i < q.size(); ++i) {
    const float ours = Float8E4M3FNToFloat(q[i]);
    if (std::isnan(ours)) {
      EXPECT_TRUE(std::isnan(y[i])) << "bits " << i;
    } else {
      EXPECT_EQ(Bits(ours), Bits(y[i])) << "bits " << i;
    }
  }
}

}  // namespace
}  // namespace ptqkit
