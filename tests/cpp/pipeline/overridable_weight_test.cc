// One replacement policy for every mode that stores weights quantized (onnx/graph_editor.h,
// WhyNotReplaceable): an initializer that is also a graph input is a default the caller may
// override, so --dq_only INT8 and INT4 both leave it float (the input stays, the node is listed in
// left_in_float with the reason), and quantize the other weights as usual.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>

#include "onnx/graph_builder.h"
#include "onnx/model_io.h"
#include "ptqkit/quantize.h"

namespace ptqkit {
namespace {
namespace fs = std::filesystem;

constexpr const char* kReason = "weight is also a graph input (a caller may override it)";

// x[N,32] -> MatMul(w_fed) -> Relu -> MatMul(w_own) -> Relu -> out; w_fed is an initializer that
// is also listed as a graph input.
fs::path MakeModel(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("ptqkit_overridable_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  GraphBuilder b;
  b.Input("x", {-1, 32}).Input("w_fed", {32, 32}).Weight("w_fed", {32, 32}).Weight("w_own", {32, 32});
  b.Node("MatMul", {"x", "w_fed"}, {"m1"}, "mm_fed").Node("Relu", {"m1"}, {"r1"}, "relu1");
  b.Node("MatMul", {"r1", "w_own"}, {"m2"}, "mm_own").Node("Relu", {"m2"}, {"out"}, "relu2");
  b.Output("out");
  const fs::path model = dir / "model.onnx";
  onnxio::SaveModel(b.Build(), model.string());
  return model;
}

HostTensor Samples(int64_t n) {
  HostTensor t(DataType::kFloat, {n, 32});
  for (int64_t i = 0; i < t.NumElements(); ++i) t.Data<float>()[i] = std::sin(0.37f * static_cast<float>(i));
  return t;
}

void ExpectFedWeightLeftFloat(const QuantizeReport& r) {
  const auto it = std::find_if(r.left_in_float.begin(), r.left_in_float.end(),
                               [](const auto& e) { return e.first == "mm_fed"; });
  ASSERT_NE(it, r.left_in_float.end()) << "mm_fed not listed as left in float";
  EXPECT_EQ(it->second, kReason);
  const onnx::ModelProto out = onnxio::LoadModel(r.output_path);
  bool input_kept = false, float_kept = false;
  for (const auto& i : out.graph().input()) input_kept |= i.name() == "w_fed";
  for (const auto& t : out.graph().initializer()) {
    float_kept |= t.name() == "w_fed" && t.data_type() == onnx::TensorProto::FLOAT;
  }
  EXPECT_TRUE(input_kept) << "the graph input w_fed was removed";
  EXPECT_TRUE(float_kept) << "the float default of w_fed was replaced";
  for (const auto& n : out.graph().node()) {
    if (n.name() == "mm_fed") {
      EXPECT_EQ(n.input(1), "w_fed");
    }
    if (n.name() == "mm_own") {
      EXPECT_NE(n.input(1), "w_own") << "the other weight was not quantized";
    }
  }
}

TEST(OverridableWeight, DqOnlyInt8LeavesItFloatWithTheReason) {
  QuantizeOptions o;
  o.onnx_path = MakeModel("dq_only").string();
  o.dq_only = true;
  o.calibration_method = "max";
  o.eval_samples = 0;
  o.calibration_tensors = std::map<std::string, HostTensor>{{"x", Samples(8)}};
  ExpectFedWeightLeftFloat(Quantize(o));
}

TEST(OverridableWeight, Int4LeavesItFloatWithTheReason) {
  QuantizeOptions o;
  o.onnx_path = MakeModel("int4").string();
  o.quantize_mode = "int4";
  o.calibration_method = "rtn";
  o.block_size = 32;
  ExpectFedWeightLeftFloat(Quantize(o));
}

}  // namespace
}  // namespace ptqkit
