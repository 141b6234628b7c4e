// FoldWeightQdq on what the quantize pipeline writes: the folded model computes the same bits as
// the written one in ONNX Runtime, and the loss report's in-place fold never reaches the file.
#include "quant/rewrite/weight_qdq_fold.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>

#include "onnx/graph_builder.h"
#include "onnx/model_io.h"
#include "onnx/session_model.h"
#include "ptqkit/quantize.h"
#include "runtime/session.h"

namespace ptqkit {
namespace {
namespace fs = std::filesystem;

// x[N,24,5,5] -> Conv(24->32) -> Relu -> Flatten -> MatMul[800,32] -> Relu -> MatMul[32,24] -> out:
// Conv weights per channel on axis 0 (runs of 72 values a scale), MatMul weights on the last axis
// (a new scale every value). GraphBuilder stores weights as float_data, numpy exports as raw_data:
// the raw case is the MatMul chain of bench/large_model_memory.py and the corpus.
fs::path MakeModel(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("ptqkit_fold_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  GraphBuilder b;
  b.Input("x", {-1, 24, 5, 5}).Weight("wc", {32, 24, 3, 3}, 0.3f).Weight("w1", {800, 32}, 0.05f).Weight("w2", {32, 24}, 0.2f);
  b.Node("Conv", {"x", "wc"}, {"c"}, "conv", {{"pads", {1, 1, 1, 1}}}).Node("Relu", {"c"}, {"r"}, "relu");
  b.Node("Flatten", {"r"}, {"f"}, "flatten").Node("MatMul", {"f", "w1"}, {"m1"}, "mm1").Node("Relu", {"m1"}, {"r1"}, "relu1");
  b.Node("MatMul", {"r1", "w2"}, {"out"}, "mm2");
  b.Output("out");
  const fs::path model = dir / "model.onnx";
  onnxio::SaveModel(b.Build(), model.string());
  return model;
}

HostTensor Samples(int64_t n) {
  HostTensor t(DataType::kFloat, {n, 24, 5, 5});
  float* d = t.Data<float>();
  for (int64_t i = 0; i < t.NumElements(); ++i) d[i] = std::sin(0.41f * static_cast<float>(i)) * (1.0f + static_cast<float>(i % 5));
  return t;
}

std::string Quantized(const fs::path& model, const std::string& mode, int64_t eval_samples, bool dq_only = false) {
  QuantizeOptions o;
  o.dq_only = dq_only;
  o.onnx_path = model.string();
  o.output_path = (model.parent_path() / (mode + (dq_only ? "_dq.onnx" : ".onnx"))).string();
  o.quantize_mode = mode;
  o.calibration_tensors = std::map<std::string, HostTensor>{{"x", Samples(24)}};
  o.eval_samples = eval_samples;
  return Quantize(o).output_path;
}

HostTensor RunBasic(const onnx::ModelProto& m) {
  RuntimeOptions basic;
  basic.basic_optimizations_only = true;
  InferenceSession session(onnxio::MakeSessionModel(m), basic);
  return session.Run(Batch{{"x", Samples(6)}}, {"out"}).at(0);
}

int CountOps(const onnx::ModelProto& m, const std::string& op) {
  int n = 0;
  for (const auto& node : m.graph().node()) n += node.op_type() == op;
  return n;
}

const onnx::TensorProto* FindInit(const onnx::ModelProto& m, const std::string& name) {
  for (const auto& t : m.graph().initializer()) {
    if (t.name() == name) return &t;
  }
  return nullptr;
}

// What ONNX Runtime's own QuantizeLinear -> DequantizeLinear make of the weight that the pair
// starting at Q node `q` of `model` quantizes: the pair alone, its output a graph output.
HostTensor OnnxRuntimePair(const onnx::ModelProto& model, int q) {
  const onnx::NodeProto& qn = model.graph().node(q);
  onnx::ModelProto pair;
  pair.set_ir_version(model.ir_version());
  *pair.mutable_opset_import() = model.opset_import();
  auto* g = pair.mutable_graph();
  g->set_name("pair");
  for (const auto& name : qn.input()) *g->add_initializer() = *FindInit(model, name);
  *g->add_node() = qn;
  for (const auto& n : model.graph().node()) {
    if (n.op_type() == "DequantizeLinear" && n.input(0) == qn.output(0)) *g->add_node() = n;
  }
  const std::string out = g->node(1).output(0);
  g->add_output()->set_name(out);
  InferenceSession session(pair.SerializeAsString(), RuntimeOptions{});
  return session.Run(Batch{}, {out}).at(0);
}

class FoldTest : public ::testing::TestWithParam<std::string> {};

TEST_P(FoldTest, FoldedWeightsAreOnnxRuntimesBits) {
  const std::string written = Quantized(MakeModel("bits_" + GetParam()), GetParam(), 0);
  const onnx::ModelProto model = onnxio::LoadModel(written);
  std::map<std::string, HostTensor> expected;  // weight -> ONNX Runtime's Q -> DQ of it
  for (int i = 0; i < model.graph().node_size(); ++i) {
    const onnx::NodeProto& n = model.graph().node(i);
    if (n.op_type() == "QuantizeLinear" && FindInit(model, n.input(0))) expected[n.input(0)] = OnnxRuntimePair(model, i);
  }
  ASSERT_EQ(expected.size(), 2u);  // the Conv's (axis 0: runs of 216 values a scale) and mm1's (axis 1)
  const int pairs = CountOps(model, "QuantizeLinear");

  onnx::ModelProto folded = model;
  EXPECT_EQ(FoldWeightQdq(&folded), 2);
  EXPECT_EQ(CountOps(folded, "QuantizeLinear"), pairs - 2);  // activations keep their pairs
  for (const auto& [name, ort] : expected) {
    const onnx::TensorProto* w = FindInit(folded, name);
    ASSERT_TRUE(w);
    ASSERT_EQ(static_cast<size_t>(w->float_data_size()) * sizeof(float), ort.bytes.size()) << name;
    EXPECT_EQ(std::memcmp(w->float_data().data(), ort.bytes.data(), ort.bytes.size()), 0)
        << name << ": the folded values differ from ONNX Runtime's QuantizeLinear/DequantizeLinear";
  }
  // The whole model agrees too (not bit for bit: ONNX Runtime pre-packs a constant MatMul weight
  // but not a DequantizeLinear output, and the two GEMM paths sum in different orders).
  const HostTensor a = RunBasic(model), b = RunBasic(folded);
  ASSERT_EQ(a.bytes.size(), b.bytes.size());
  for (int64_t i = 0; i < a.NumElements(); ++i) {
    EXPECT_NEAR(a.Data<float>()[i], b.Data<float>()[i], 1e-4f * (1.0f + std::abs(a.Data<float>()[i])));
  }
  EXPECT_EQ(FoldWeightQdq(&folded), 0);  // nothing left to fold
}

// Budget candidates and probes of a model over 256 MiB of weights run with every large tensor as
// a graph input, each weight's Q -> DQ replaced by one FakeQuantizeWeight node over the FP32 weight
// (FakeQuantizeWeightsAtRun): the outputs must be the pair's bits, along axis 0 (Conv) and the last
// axis (MatMul), with the weights in the model and with placeholders viewed from it (BuildLight).
TEST_P(FoldTest, FakeQuantizeWeightsAtRunGivesThePairsBits) {
  onnx::ModelProto model = onnxio::LoadModel(Quantized(MakeModel("run_" + GetParam()), GetParam(), 0));
  for (auto& t : *model.mutable_graph()->mutable_initializer()) {  // as exported models store them
    if (t.data_type() != onnx::TensorProto::FLOAT || t.float_data_size() == 0) continue;
    t.set_raw_data(std::string(reinterpret_cast<const char*>(t.float_data().data()), t.float_data_size() * sizeof(float)));
    t.clear_float_data();
  }
  onnx::ModelProto at_run = model;
  ASSERT_EQ(FakeQuantizeWeightsAtRun(&at_run), 2);
  EXPECT_EQ(CountOps(at_run, "QuantizeLinear"), CountOps(model, "QuantizeLinear") - 2);
  for (int i = 0; i < 2; ++i) {  // listed first, so each runs just before its reader
    EXPECT_EQ(at_run.graph().node(i).op_type(), kFakeQuantizeWeightOp);
    EXPECT_EQ(at_run.graph().node(i).domain(), kRunOpsDomain);
  }
  RuntimeOptions basic;
  basic.basic_optimizations_only = true;
  const auto run = [&](const onnx::ModelProto& m, const onnx::GraphProto& weights) {
    InferenceSession session(onnxio::MakeSessionModelOver(m, weights, /*all_as_inputs=*/true), basic);
    return session.Run(Batch{{"x", Samples(6)}}, {"out"}).at(0);
  };
  const HostTensor pairs = run(model, model.graph()), fused = run(at_run, at_run.graph());
  ASSERT_EQ(pairs.bytes.size(), fused.bytes.size());
  EXPECT_EQ(pairs.bytes, fused.bytes) << "FakeQuantizeWeight changed the outputs";
  EXPECT_EQ(FakeQuantizeWeightsAtRun(&at_run), 0);  // nothing left

  onnx::ModelProto light = onnxio::CopyWithoutLargeWeights(model, 1024, onnxio::WeightPlaceholder);
  ASSERT_EQ(FakeQuantizeWeightsAtRun(&light), 2);
  EXPECT_EQ(run(light, model.graph()).bytes, pairs.bytes) << "over placeholders";
  // The written model never holds the run-only operator.
  EXPECT_EQ(CountOps(model, kFakeQuantizeWeightOp), 0);
}

// With all_as_inputs, the light model's own large initializers are views and graph inputs too:
// the session model's serialized graph carries none of their bytes, and the session reads them.
TEST(Fold, SessionOverALightModelViewsItsOwnLargeInitializers) {
  onnx::ModelProto model = onnxio::LoadModel(Quantized(MakeModel("views"), "int8", 0, true));
  onnx::TensorProto* big = model.mutable_graph()->add_initializer();
  big->set_name("codes_like");
  big->set_data_type(onnx::TensorProto::INT8);
  big->add_dims(96 * 1024);
  std::string bytes(96 * 1024, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7);
  big->set_raw_data(bytes);
  auto* reader = model.mutable_graph()->add_node();
  reader->set_op_type("Identity");
  reader->set_name("read_codes_like");
  reader->add_input("codes_like");
  reader->add_output("codes_like_out");
  model.mutable_graph()->add_output()->set_name("codes_like_out");

  const onnxio::SessionModel viewed = onnxio::MakeSessionModelOver(model, model.graph(), /*all_as_inputs=*/true);
  EXPECT_TRUE(viewed.weights_as_inputs);
  ASSERT_EQ(viewed.weights.size(), 1u);
  EXPECT_EQ(viewed.weights[0].data, model.graph().initializer(model.graph().initializer_size() - 1).raw_data().data());
  EXPECT_LT(viewed.graph_bytes.size(), bytes.size());
  InferenceSession session(viewed, RuntimeOptions{});
  const HostTensor out = session.Run(Batch{{"x", Samples(2)}}, {"codes_like_out"}).at(0);
  ASSERT_EQ(out.bytes.size(), bytes.size());
  EXPECT_EQ(std::memcmp(out.bytes.data(), bytes.data(), bytes.size()), 0);
  // Without it only placeholders become views, and this model has none.
  EXPECT_TRUE(onnxio::MakeSessionModelOver(model, model.graph()).weights.empty());
}

INSTANTIATE_TEST_SUITE_P(Formats, FoldTest, ::testing::Values("int8", "fp8"));

TEST(Fold, LeavesAWeightAnotherNodeAlsoReadsAlone) {
  const std::string written = Quantized(MakeModel("shared"), "int8", 0);
  onnx::ModelProto model = onnxio::LoadModel(written);
  // A second reader of w1 (the float weight the pair quantizes): folding would change what it reads.
  auto* extra = model.mutable_graph()->add_node();
  extra->set_op_type("Identity");
  extra->set_name("also_reads_w1");
  extra->add_input("w1");
  extra->add_output("w1_copy");
  model.mutable_graph()->add_output()->set_name("w1_copy");
  EXPECT_EQ(FoldWeightQdq(&model), 1);  // the Conv weight only
}

TEST(Fold, TheLossReportNeverFoldsTheWrittenWeights) {
  const fs::path model = MakeModel("written");
  const onnx::ModelProto original = onnxio::LoadModel(model.string());
  const onnx::ModelProto out = onnxio::LoadModel(Quantized(model, "int8", 8));
  for (const auto* name : {"wc", "w1", "w2"}) {
    const onnx::TensorProto* before = nullptr;
    const onnx::TensorProto* after = nullptr;
    for (const auto& t : original.graph().initializer()) before = t.name() == name ? &t : before;
    for (const auto& t : out.graph().initializer()) after = t.name() == name ? &t : after;
    ASSERT_TRUE(before && after) << name;
    EXPECT_EQ(before->raw_data(), after->raw_data()) << name << " is not the FP32 weight";
  }
}

}  // namespace
}  // namespace ptqkit
