// Quantize() with quantize_mode int4 through the C++ API: the per-mode default and the checks of
// calibration_method, and errors that leave nothing behind.
#include <gtest/gtest.h>

#include <filesystem>

#include "onnx/graph_builder.h"
#include "onnx/model_io.h"
#include "ptqkit/error.h"
#include "ptqkit/quantize.h"

namespace ptqkit {
namespace {
namespace fs = std::filesystem;

fs::path Dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("ptqkit_int4_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// x[N,40] -> MatMul(40x24) -> Relu -> Gemm(transB, 24 -> 16) -> out
fs::path MlpModel(const fs::path& dir) {
  GraphBuilder b;
  b.Input("x", {-1, 40}).Weight("w1", {40, 24}).Weight("w2", {16, 24}).Weight("b2", {16});
  b.Node("MatMul", {"x", "w1"}, {"h"}, "fc1").Node("Relu", {"h"}, {"r"}, "relu");
  b.Node("Gemm", {"r", "w2", "b2"}, {"out"}, "fc2", {{"transB", {1}}}).Output("out");
  const fs::path p = dir / "mlp.onnx";
  onnxio::SaveModel(b.Build(), p.string());
  return p;
}

QuantizeOptions Int4Options(const fs::path& model) {
  QuantizeOptions o;
  o.onnx_path = model.string();
  o.quantize_mode = "int4";
  o.num_synthetic_samples = 8;
  return o;
}

TEST(QuantizeInt4, DefaultsToAwqClipAndWritesOpset21) {
  const fs::path dir = Dir("default");
  QuantizeOptions o = Int4Options(MlpModel(dir));
  o.block_size = 16;  // K = 40 and 24: short last blocks
  const QuantizeReport r = Quantize(o);
  EXPECT_EQ(r.calibration_method, "awq_clip");
  EXPECT_EQ(r.output_opset, 21);
  EXPECT_EQ(r.qdq_pairs, 2);
  EXPECT_EQ(r.quantized_by_op_type.at("MatMul"), 1);
  EXPECT_EQ(r.quantized_by_op_type.at("Gemm"), 1);
  const onnx::ModelProto m = onnxio::LoadModel(r.output_path);
  EXPECT_GE(m.ir_version(), 10);
  int int4 = 0;
  for (const auto& t : m.graph().initializer()) {
    int4 += t.data_type() == 22;
    EXPECT_NE(t.name(), "w1");  // the float weights are gone
  }
  EXPECT_EQ(int4, 2);

  o.calibration_method = "rtn";
  o.output_path = (dir / "rtn.onnx").string();
  EXPECT_EQ(Quantize(o).calibration_method, "rtn");
}

TEST(QuantizeInt4, MethodsBelongToTheirModes) {
  const fs::path dir = Dir("methods");
  QuantizeOptions o = Int4Options(MlpModel(dir));
  o.calibration_method = "entropy";
  EXPECT_THROW(Quantize(o), Error);
  o.calibration_method = "awq_lite";  // the three int4 methods are accepted
  o.output_path = (dir / "lite.onnx").string();
  EXPECT_EQ(Quantize(o).calibration_method, "awq_lite");
  o.output_path.clear();
  o.calibration_method = "awq_clip";
  o.quantize_mode = "int8";
  EXPECT_THROW(Quantize(o), Error);
  o.quantize_mode = "int4";
  o.calibration_method = "";
  o.block_size = 0;
  EXPECT_THROW(Quantize(o), Error);
  o.block_size = 128;
  o.save_calibration_cache = (dir / "cache.json").string();
  EXPECT_THROW(Quantize(o), Error);
  EXPECT_FALSE(fs::exists(dir / "mlp.quant.onnx"));
  // int8 defaults to mse (issue 9: entropy wrecked real models).
  QuantizeOptions i8;
  i8.onnx_path = o.onnx_path;
  i8.num_synthetic_samples = 4;
  EXPECT_EQ(Quantize(i8).calibration_method, "mse");
}

TEST(QuantizeInt4, ModelWithoutEligibleWeightsIsAnErrorAndWritesNothing) {
  const fs::path dir = Dir("none");
  GraphBuilder b;
  b.Input("a", {2, 8}).Input("c", {8, 4});
  b.Node("MatMul", {"a", "c"}, {"out"}, "mm").Output("out");
  const fs::path p = dir / "acts.onnx";
  onnxio::SaveModel(b.Build(), p.string());
  QuantizeOptions o = Int4Options(p);
  o.calibration_method = "rtn";
  try {
    Quantize(o);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'mm': weight (input B) is not a constant"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir / "acts.quant.onnx"));
}

}  // namespace
}  // namespace ptqkit
