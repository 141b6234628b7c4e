// --canonicalize in a quantize run: the BatchNormalization is folded before placement (so the
// output has none and the Conv's weight Q/DQ covers the folded weight), the report counts it and
// measures the fold against the model as given; turned off, the graph keeps it.
#include <gtest/gtest.h>

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

fs::path ConvBatchNormModel() {
  const fs::path dir = fs::temp_directory_path() / "ptqkit_canonical_quantize";
  fs::remove_all(dir);
  fs::create_directories(dir);
  GraphBuilder b;
  b.Input("x", {-1, 16, 6, 6}).Weight("w", {32, 16, 3, 3}, 0.3f).Weight("w2", {32, 32, 1, 1}, 0.3f);
  b.Node("Conv", {"x", "w"}, {"c"}, "conv", {{"pads", {1, 1, 1, 1}}});
  b.Node("BatchNormalization", {"c", "g", "beta", "mean", "var"}, {"y"}, "bn").Node("Relu", {"y"}, {"r"}, "relu");
  b.Node("Conv", {"r", "w2"}, {"c2"}, "conv2").Node("Relu", {"c2"}, {"out"}, "relu2").Output("out");
  onnx::ModelProto m = b.Build(15);
  const auto add = [&](const std::string& name, float a, float s) {
    auto* t = m.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(32);
    for (int i = 0; i < 32; ++i) t->add_float_data(a + s * static_cast<float>(i % 7));
  };
  add("g", 0.2f, 0.5f);
  add("beta", -0.3f, 0.1f);
  add("mean", -0.1f, 0.05f);
  add("var", 0.1f, 0.6f);
  const fs::path path = dir / "model.onnx";
  onnxio::SaveModel(m, path.string());
  return path;
}

HostTensor Samples(int64_t n) {
  HostTensor t(DataType::kFloat, {n, 16, 6, 6});
  float* d = t.Data<float>();
  for (int64_t i = 0; i < t.NumElements(); ++i) d[i] = std::sin(0.29f * static_cast<float>(i));
  return t;
}

int Count(const onnx::ModelProto& m, const std::string& op) {
  int n = 0;
  for (const auto& node : m.graph().node()) n += node.op_type() == op;
  return n;
}

QuantizeReport QuantizeWith(const fs::path& model, bool canonicalize, int64_t batch_size = 0) {
  QuantizeOptions o;
  o.calibration_batch_size = batch_size;
  o.onnx_path = model.string();
  o.output_path = (model.parent_path() / (canonicalize ? "folded.onnx" : "unfolded.onnx")).string();
  o.calibration_tensors = std::map<std::string, HostTensor>{{"x", Samples(24)}};
  o.eval_samples = 4;
  o.canonicalize = canonicalize;
  return Quantize(o);
}

TEST(CanonicalQuantize, FoldsBatchNormBeforePlacementAndMeasuresTheFold) {
  const fs::path model = ConvBatchNormModel();
  const QuantizeReport folded = QuantizeWith(model, true);
  EXPECT_EQ(folded.folded_batchnorms, 1);
  EXPECT_GT(folded.canonical_checked_samples, 0);
  EXPECT_GE(folded.canonical_max_abs_diff, 0.0);
  EXPECT_LT(folded.canonical_max_abs_diff, 1e-4);
  const onnx::ModelProto out = onnxio::LoadModel(folded.output_path);
  EXPECT_EQ(Count(out, "BatchNormalization"), 0);
  EXPECT_EQ(folded.quantized_by_op_type.at("Conv"), 2);

  // In batches of 5: the comparison runs whole batches of the calibration samples (8 -> one batch here).
  const QuantizeReport batched = QuantizeWith(model, true, 5);
  EXPECT_EQ(batched.canonical_checked_samples, 5);
  EXPECT_LT(batched.canonical_max_abs_diff, 1e-4);

  const QuantizeReport kept = QuantizeWith(model, false);
  EXPECT_EQ(kept.folded_batchnorms, 0);
  EXPECT_EQ(kept.canonical_checked_samples, 0);
  EXPECT_EQ(Count(onnxio::LoadModel(kept.output_path), "BatchNormalization"), 1);
}

}  // namespace
}  // namespace ptqkit
