// Quantize() through the C++ API: in-memory calibration tensors, batch-size independence,
// calibration cache round trip, and errors that leave nothing behind.
#include "ptqkit/quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "onnx/graph_builder.h"
#include "onnx/model_io.h"
#include "ptqkit/error.h"

namespace ptqkit {
namespace {
namespace fs = std::filesystem;

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Fixture {
  fs::path dir;
  fs::path model;
};

// x[N,16,6,6] -> Conv(16->16) -> Relu -> Conv(16->16) -> Relu -> out
Fixture MakeModel(const std::string& name) {
  Fixture f{fs::temp_directory_path() / ("ptqkit_quantize_" + name), {}};
  fs::remove_all(f.dir);
  fs::create_directories(f.dir);
  GraphBuilder b;
  b.Input("x", {-1, 16, 6, 6}).Weight("w1", {16, 16, 3, 3}).Weight("w2", {16, 16, 3, 3});
  b.Node("Conv", {"x", "w1"}, {"c1"}, "conv1", {{"pads", {1, 1, 1, 1}}}).Node("Relu", {"c1"}, {"r1"}, "relu1");
  b.Node("Conv", {"r1", "w2"}, {"c2"}, "conv2", {{"pads", {1, 1, 1, 1}}}).Node("Relu", {"c2"}, {"out"}, "relu2");
  b.Output("out");
  f.model = f.dir / "model.onnx";
  onnxio::SaveModel(b.Build(), f.model.string());
  return f;
}

HostTensor Samples(int64_t n, float nan_every = 0) {
  HostTensor t(DataType::kFloat, {n, 16, 6, 6});
  float* d = t.Data<float>();
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    d[i] = std::sin(0.37f * static_cast<float>(i)) * (1.0f + static_cast<float>(i % 7));
    if (nan_every > 0) d[i] = std::numeric_limits<float>::quiet_NaN();
  }
  return t;
}

float ScalarInitializer(const onnx::ModelProto& m, const std::string& name) {
  for (const auto& t : m.graph().initializer()) {
    if (t.name() == name) {
      float v;
      std::memcpy(&v, t.raw_data().data(), 4);
      return v;
    }
  }
  ADD_FAILURE() << "no initializer " << name;
  return 0;
}

TEST(Quantize, InMemoryTensorsMaxScalesAreAbsmaxOver127) {
  Fixture f = MakeModel("memory");
  const std::string before = ReadAll(f.model);
  QuantizeOptions o;
  o.onnx_path = f.model.string();
  o.calibration_tensors = std::map<std::string, HostTensor>{{"x", Samples(10)}};
  o.calibration_method = "max";
  const QuantizeReport r = Quantize(o);
  EXPECT_EQ(r.output_path, (f.dir / "model.quant.onnx").string());
  EXPECT_EQ(ReadAll(f.model), before);  // the input is never modified
  EXPECT_EQ(r.quantized_by_op_type.at("Conv"), 2);
  EXPECT_EQ(r.qdq_pairs, 4);  // two activations, two weights
  const auto out = onnxio::LoadModel(r.output_path);
  // Input x: absmax over the data / 127.
  const HostTensor x = Samples(10);
  float amax = 0;
  for (int64_t i = 0; i < x.NumElements(); ++i) amax = std::max(amax, std::abs(x.Data<float>()[i]));
  EXPECT_FLOAT_EQ(ScalarInitializer(out, "x_scale"), amax / 127.0f);
}

TEST(Quantize, ScalesDoNotDependOnBatchSizeAndTheCacheReproducesTheModel) {
  Fixture f = MakeModel("batches");
  QuantizeOptions o;
  o.onnx_path = f.model.string();
  o.calibration_tensors = std::map<std::string, HostTensor>{{"x", Samples(23)}};
  o.calibration_batch_size = 1;
  o.output_path = (f.dir / "b1.onnx").string();
  EXPECT_EQ(Quantize(o).bias_corrected_convs, 2);
  o.calibration_batch_size = 7;
  o.output_path = (f.dir / "b7.onnx").string();
  Quantize(o);
  // Bias correction included: its channel means are double sums, the corrected float biases the same
  // for batches of 1 and 7 here.
  EXPECT_EQ(ReadAll(f.dir / "b1.onnx"), ReadAll(f.dir / "b7.onnx"));
  // A run that saves the statistics corrects no bias (the cache has no channel means), so that a run
  // from the cache reproduces its model.
  o.output_path = (f.dir / "saved.onnx").string();
  o.save_calibration_cache = (f.dir / "cache.json").string();
  EXPECT_EQ(Quantize(o).bias_corrected_convs, 0);
  QuantizeOptions cached;
  cached.onnx_path = f.model.string();
  cached.calibration_cache = (f.dir / "cache.json").string();
  cached.output_path = (f.dir / "cached.onnx").string();
  const QuantizeReport r = Quantize(cached);
  EXPECT_TRUE(r.calibration_from_cache);
  EXPECT_EQ(r.bias_corrected_convs, 0);
  EXPECT_EQ(ReadAll(f.dir / "cached.onnx"), ReadAll(f.dir / "saved.onnx"));
}

TEST(Quantize, NanOnlyDataIsAnErrorNamingTheTensorAndWritesNothing) {
  Fixture f = MakeModel("nan");
  QuantizeOptions o;
  o.onnx_path = f.model.string();
  o.calibration_tensors = std::map<std::string, HostTensor>{{"x", Samples(4, 1)}};
  try {
    Quantize(o);
    FAIL() << "all-NaN calibration data must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'x'"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(f.dir / "model.quant.onnx"));
}

TEST(Quantize, OutputEqualToInputAndUnknownOptionsAreRefused) {
  Fixture f = MakeModel("refuse");
  QuantizeOptions o;
  o.onnx_path = f.model.string();
  o.output_path = (f.dir / "." / "model.onnx").string();
  EXPECT_THROW(Quantize(o), Error);
  o.output_path.clear();
  o.calibration_method = "minmax";
  EXPECT_THROW(Quantize(o), Error);
  o.calibration_method = "max";
  o.quantize_mode = "int3";
  EXPECT_THROW(Quantize(o), Error);
  EXPECT_FALSE(fs::exists(f.dir / "model.quant.onnx"));
}

TEST(Quantize, Fp8UsesTheFullE4M3Grid) {
  Fixture f = MakeModel("fp8");
  QuantizeOptions o;
  o.onnx_path = f.model.string();
  o.quantize_mode = "fp8";
  o.calibration_method = "max";
  // Convs need > 16 channels for the fp8 rules; select them explicitly to test the numerics.
  o.op_types_to_quantize = {"Conv"};
  o.calibration_tensors = std::map<std::string, HostTensor>{{"x", Samples(5)}};
  const QuantizeReport r = Quantize(o);
  EXPECT_EQ(r.output_opset, 21);
  const auto out = onnxio::LoadModel(r.output_path);
  const HostTensor x = Samples(5);
  float amax = 0;
  for (int64_t i = 0; i < x.NumElements(); ++i) amax = std::max(amax, std::abs(x.Data<float>()[i]));
  EXPECT_FLOAT_EQ(ScalarInitializer(out, "x_scale"), amax / 448.0f);
  // No zero points: every Q names FLOAT8E4M3FN in output_dtype, every Q/DQ has two inputs.
  int quantize_nodes = 0;
  for (const auto& n : out.graph().node()) {
    if (n.op_type() != "QuantizeLinear" && n.op_type() != "DequantizeLinear") continue;
    EXPECT_EQ(n.input_size(), 2) << n.name();
    if (n.op_type() != "QuantizeLinear") continue;
    ++quantize_nodes;
    int64_t output_dtype = 0;
    for (const auto& a : n.attribute()) {
      if (a.name() == "output_dtype") output_dtype = a.i();
    }
    EXPECT_EQ(output_dtype, onnx::TensorProto::FLOAT8E4M3FN) << n.name();
  }
  EXPECT_GT(quantize_nodes, 0);
  for (const auto& t : out.graph().initializer()) EXPECT_EQ(t.name().find("zero_point"), std::string::npos) << t.name();
}

}  // namespace
}  // namespace ptqkit
