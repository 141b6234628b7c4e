// Canonicalize on small graphs: each fold removes what it should, leaves alone what it must not
// touch, and the folded model computes what the original computes in ONNX Runtime.
#include "canon/canonicalize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "onnx/graph_builder.h"
#include "onnx/session_model.h"
#include "runtime/session.h"

namespace ptqkit {
namespace {

void AddFloats(onnx::ModelProto* m, const std::string& name, const std::vector<int64_t>& dims,
               const std::vector<float>& values) {
  auto* t = m->mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  for (float v : values) t->add_float_data(v);
}

std::vector<float> Ramp(int n, float from, float to) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = from + (to - from) * static_cast<float>(i) / static_cast<float>(std::max(1, n - 1));
  return v;
}

// BatchNormalization's four constants for `c` channels (variances positive, scales of both signs).
void AddBatchNormConstants(onnx::ModelProto* m, const std::string& p, int c) {
  AddFloats(m, p + "_g", {c}, Ramp(c, -1.5f, 2.0f));
  AddFloats(m, p + "_b", {c}, Ramp(c, 0.3f, -0.7f));
  AddFloats(m, p + "_m", {c}, Ramp(c, -0.2f, 0.4f));
  AddFloats(m, p + "_v", {c}, Ramp(c, 0.05f, 3.0f));
}

HostTensor Input(const std::vector<int64_t>& shape) {
  HostTensor t(DataType::kFloat, shape);
  float* d = t.Data<float>();
  for (int64_t i = 0; i < t.NumElements(); ++i) d[i] = 4.0f * std::sin(0.37f * static_cast<float>(i));
  return t;
}

std::vector<float> RunModel(const onnx::ModelProto& m, const std::vector<int64_t>& shape) {
  RuntimeOptions basic;
  basic.basic_optimizations_only = true;
  InferenceSession session(onnxio::MakeSessionModel(m), basic);
  const HostTensor out = session.Run(Batch{{"x", Input(shape)}}, {"out"}).at(0);
  return {out.Data<float>(), out.Data<float>() + out.NumElements()};
}

double MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) worst = std::max(worst, std::fabs(double(a[i]) - b[i]));
  return worst;
}

int Count(const onnx::ModelProto& m, const std::string& op) {
  return static_cast<int>(std::count_if(m.graph().node().begin(), m.graph().node().end(),
                                        [&](const onnx::NodeProto& n) { return n.op_type() == op; }));
}

// Folds `m` and checks it computes the same outputs (to float rounding) on input `shape`.
CanonicalizeStats FoldAndCompare(onnx::ModelProto* m, const std::vector<int64_t>& shape) {
  const std::vector<float> before = RunModel(*m, shape);
  EXPECT_TRUE(HasCanonicalFolds(*m));
  const CanonicalizeStats stats = Canonicalize(m);
  EXPECT_FALSE(HasCanonicalFolds(*m));
  EXPECT_LT(MaxAbsDiff(before, RunModel(*m, shape)), 1e-4);
  return stats;
}

TEST(Canonicalize, FoldsBatchNormIntoConvAndAddsTheBias) {
  GraphBuilder b;
  b.Input("x", {-1, 3, 6, 6}).Weight("w", {8, 3, 3, 3}, 0.5f);
  b.Node("Conv", {"x", "w"}, {"c"}, "conv", {{"pads", {1, 1, 1, 1}}});
  b.Node("BatchNormalization", {"c", "bn_g", "bn_b", "bn_m", "bn_v"}, {"y"}, "bn", {}, {{"epsilon", 1e-3f}});
  b.Node("Relu", {"y"}, {"out"}, "relu").Output("out");
  onnx::ModelProto m = b.Build(15);
  AddBatchNormConstants(&m, "bn", 8);
  EXPECT_EQ(FoldAndCompare(&m, {2, 3, 6, 6}).batchnorms_folded, 1);
  EXPECT_EQ(Count(m, "BatchNormalization"), 0);
  const auto& conv = m.graph().node(0);
  ASSERT_EQ(conv.op_type(), "Conv");
  ASSERT_EQ(conv.input_size(), 3);     // a bias was added
  EXPECT_EQ(conv.output(0), "y");      // the Conv now writes the BatchNormalization's tensor
  EXPECT_EQ(m.graph().initializer_size(), 2);  // folded weight and bias; the originals are gone
}

TEST(Canonicalize, FoldsThroughIdentityAndCastAndConstantNodes) {
  // Paddle-style: weights in Constant nodes, reaching the Conv through Identity and Cast.
  GraphBuilder b;
  b.Input("x", {1, 4, 5, 5}).ConstantWeight("w", {6, 2, 3, 3}, 0.4f).ConstantWeight("bias", {6}, 0.2f);
  b.Node("Identity", {"w"}, {"w_id"}, "w_identity").Node("Cast", {"w_id"}, {"w_f"}, "w_cast", {{"to", {1}}});
  b.Node("Conv", {"x", "w_f", "bias"}, {"c"}, "conv", {{"group", {2}}});
  b.Node("BatchNormalization", {"c", "bn_g", "bn_b", "bn_m", "bn_v"}, {"out"}, "bn").Output("out");
  onnx::ModelProto m = b.Build(13);
  AddBatchNormConstants(&m, "bn", 6);
  EXPECT_EQ(FoldAndCompare(&m, {1, 4, 5, 5}).batchnorms_folded, 1);
  EXPECT_EQ(Count(m, "Identity") + Count(m, "Cast") + Count(m, "Constant"), 0);  // nothing reads them now
}

TEST(Canonicalize, FoldsBatchNormIntoGroupedConvTransposeAndGemm) {
  GraphBuilder b;
  b.Input("x", {1, 4, 3, 3}).Weight("wt", {4, 3, 2, 2}, 0.5f).Weight("wg", {5, 54}, 0.2f).Weight("cg", {5}, 0.1f);
  b.Node("ConvTranspose", {"x", "wt"}, {"t"}, "deconv", {{"group", {2}}, {"strides", {2, 2}}});  // 6 output channels
  b.Node("BatchNormalization", {"t", "bt_g", "bt_b", "bt_m", "bt_v"}, {"tb"}, "bn_t");
  b.Node("Flatten", {"tb"}, {"f"}, "flatten");
  b.Node("Slice", {"f", "s0", "s1", "s2"}, {"fs"}, "slice");
  b.Node("Gemm", {"fs", "wg", "cg"}, {"g"}, "gemm", {{"transB", {1}}});
  b.Node("BatchNormalization", {"g", "bg_g", "bg_b", "bg_m", "bg_v"}, {"out"}, "bn_g").Output("out");
  b.Int64Initializer("s0", {0}).Int64Initializer("s1", {54}).Int64Initializer("s2", {1});
  onnx::ModelProto m = b.Build(15);
  AddBatchNormConstants(&m, "bt", 6);
  AddBatchNormConstants(&m, "bg", 5);
  EXPECT_EQ(FoldAndCompare(&m, {1, 4, 3, 3}).batchnorms_folded, 2);
}

// MatMul has no bias: a BatchNormalization after it folds only when its input is known to be a
// matrix (then output channel = weight column, and the MatMul becomes a Gemm with the bias). On a
// [B, T, C] input the BatchNormalization's channel axis is T, which no weight column carries.
TEST(Canonicalize, FoldsBatchNormIntoAMatMulOfAMatrixOnly) {
  for (const bool matrix : {true, false}) {
    GraphBuilder b;
    const std::vector<int64_t> shape = matrix ? std::vector<int64_t>{4, 6} : std::vector<int64_t>{2, 5, 6};
    b.Input("x", shape).Weight("w", {6, matrix ? 5 : 3}, 0.5f);
    b.Node("Sigmoid", {"x"}, {"s"}, "sigmoid");  // the MatMul's input rank comes from shape inference
    b.Node("MatMul", {"s", "w"}, {"h"}, "matmul");
    b.Node("BatchNormalization", {"h", "bn_g", "bn_b", "bn_m", "bn_v"}, {"y"}, "bn");
    b.Node("Relu", {"y"}, {"out"}, "relu").Output("out");
    onnx::ModelProto m = b.Build(15);
    AddBatchNormConstants(&m, "bn", 5);  // 5 = the matrix case's columns = the 3-D case's T
    if (!matrix) {
      EXPECT_FALSE(HasCanonicalFolds(m));
      EXPECT_EQ(Canonicalize(&m).batchnorms_folded, 0);
      EXPECT_EQ(Count(m, "BatchNormalization"), 1);
      continue;
    }
    EXPECT_EQ(FoldAndCompare(&m, shape).batchnorms_folded, 1);
    EXPECT_EQ(Count(m, "BatchNormalization") + Count(m, "MatMul"), 0);
    ASSERT_EQ(Count(m, "Gemm"), 1);
    EXPECT_EQ(m.graph().node(1).input_size(), 3);  // the folded bias
  }
}

TEST(Canonicalize, FoldsChannelMulAndAddButNotSpatialConstants) {
  GraphBuilder b;
  b.Input("x", {1, 3, 4, 4}).Weight("w", {5, 3, 1, 1}, 0.5f);
  b.Node("Conv", {"x", "w"}, {"c"}, "conv");
  b.Node("Mul", {"c", "k"}, {"cm"}, "mul").Node("Add", {"ka", "cm"}, {"ca"}, "add");
  b.Node("Conv", {"ca", "w2"}, {"d"}, "conv2");
  b.Node("Mul", {"d", "spatial"}, {"out"}, "mul_spatial").Output("out");  // [1, 1, 4, 4]: not per channel
  onnx::ModelProto m = b.Build(13);
  AddFloats(&m, "k", {5, 1, 1}, Ramp(5, -2.0f, 3.0f));
  AddFloats(&m, "ka", {1, 5, 1, 1}, Ramp(5, 1.0f, -1.0f));
  AddFloats(&m, "w2", {5, 5, 1, 1}, Ramp(25, -0.5f, 0.5f));
  AddFloats(&m, "spatial", {1, 1, 4, 4}, Ramp(16, 0.5f, 1.5f));
  EXPECT_EQ(FoldAndCompare(&m, {1, 3, 4, 4}).affines_folded, 2);
  EXPECT_EQ(Count(m, "Mul"), 1);  // the spatial one stays
  EXPECT_EQ(Count(m, "Add"), 0);
}

TEST(Canonicalize, LeavesSharedOutputsAndOverridableWeightsAlone) {
  GraphBuilder b;
  b.Input("x", {1, 3, 4, 4}).Weight("w", {4, 3, 1, 1}, 0.5f).Weight("w2", {4, 3, 1, 1}, 0.5f);
  b.Node("Conv", {"x", "w"}, {"c"}, "conv");  // read by the BatchNormalization and the Add
  b.Node("BatchNormalization", {"c", "bn_g", "bn_b", "bn_m", "bn_v"}, {"y"}, "bn");
  b.Node("Conv", {"x", "w2"}, {"c2"}, "conv2");  // its weight is also a graph input
  b.Node("BatchNormalization", {"c2", "bn_g", "bn_b", "bn_m", "bn_v"}, {"y2"}, "bn2");
  b.Node("Add", {"y", "c"}, {"s"}, "add").Node("Add", {"s", "y2"}, {"out"}, "add2").Output("out");
  onnx::ModelProto m = b.Build(15);
  AddBatchNormConstants(&m, "bn", 4);
  auto* in = m.mutable_graph()->add_input();
  *in = m.graph().input(0);
  in->set_name("w2");
  EXPECT_FALSE(HasCanonicalFolds(m));
  EXPECT_EQ(Canonicalize(&m).total(), 0);
  EXPECT_EQ(Count(m, "BatchNormalization"), 2);
}

// x · Clip(x + 3, 0, 6) / 6 and Clip(x + 3, 0, 6) · (1/6), as Paddle and older PyTorch exports write them.
onnx::ModelProto HardActivations(int64_t opset) {
  GraphBuilder b;
  b.Input("x", {2, 8}).Output("out");
  b.Node("Add", {"x", "three"}, {"a"}, "hs_add").Node("Clip", {"a", "zero", "six"}, {"c"}, "hs_clip");
  b.Node("Mul", {"x", "c"}, {"xm"}, "hs_mul").Node("Div", {"xm", "six"}, {"h"}, "hswish");
  b.Node("Add", {"h", "three"}, {"a2"}, "sig_add").Node("Clip", {"a2", "zero", "six"}, {"c2"}, "sig_clip");
  b.Node("Mul", {"c2", "sixth"}, {"out"}, "hsigmoid");
  onnx::ModelProto m = b.Build(opset);
  AddFloats(&m, "three", {}, {3.0f});
  AddFloats(&m, "zero", {}, {0.0f});
  AddFloats(&m, "six", {}, {6.0f});
  AddFloats(&m, "sixth", {}, {1.0f / 6.0f});
  return m;
}

TEST(Canonicalize, MakesHardSwishAndHardSigmoidOneOperator) {
  onnx::ModelProto m14 = HardActivations(14);
  EXPECT_EQ(FoldAndCompare(&m14, {2, 8}).activations_fused, 2);
  EXPECT_EQ(Count(m14, "HardSwish"), 1);
  EXPECT_EQ(Count(m14, "HardSigmoid"), 1);
  EXPECT_EQ(m14.graph().node_size(), 2);
  EXPECT_EQ(m14.graph().node(0).name(), "hswish");  // the operator keeps the pattern's last name
  EXPECT_EQ(m14.graph().initializer_size(), 0);

  // Below opset 14 there is no HardSwish: x · HardSigmoid(x).
  onnx::ModelProto m13 = HardActivations(13);
  EXPECT_EQ(FoldAndCompare(&m13, {2, 8}).activations_fused, 2);
  EXPECT_EQ(Count(m13, "HardSwish"), 0);
  EXPECT_EQ(Count(m13, "HardSigmoid"), 2);
  EXPECT_EQ(Count(m13, "Mul"), 1);
}

TEST(Canonicalize, LeavesAClipWhoseBoundsAreNotAHardSigmoid) {
  GraphBuilder b;
  b.Input("x", {2, 8}).Output("out");
  b.Node("Add", {"x", "three"}, {"a"}, "add").Node("Clip", {"a", "zero", "six"}, {"c"}, "clip");
  b.Node("Div", {"c", "five"}, {"out"}, "div");  // / 5 after a clip at 6: not a HardSigmoid
  onnx::ModelProto m = b.Build(14);
  AddFloats(&m, "three", {}, {3.0f});
  AddFloats(&m, "zero", {}, {0.0f});
  AddFloats(&m, "six", {}, {6.0f});
  AddFloats(&m, "five", {}, {5.0f});
  EXPECT_FALSE(HasCanonicalFolds(m));
  EXPECT_EQ(Canonicalize(&m).total(), 0);
}

TEST(Canonicalize, FoldsASpatialZeroPadIntoTheConvAfterIt) {
  // TF's "SAME" padding: Pad(0, 0, 0, 1 | 0, 0, 1, 2) -> Conv(pads 1, 0, 0, 1): pads add up.
  GraphBuilder b;
  b.Input("x", {1, 4, 7, 7}).Weight("w", {6, 4, 3, 3}, 0.4f).Int64Initializer("p", {0, 0, 0, 1, 0, 0, 1, 2});
  b.Node("Pad", {"x", "p"}, {"padded"}, "pad");
  b.Node("Conv", {"padded", "w"}, {"out"}, "conv", {{"pads", {1, 0, 0, 1}}}).Output("out");
  onnx::ModelProto m = b.Build(17);
  EXPECT_EQ(FoldAndCompare(&m, {1, 4, 7, 7}).pads_folded, 1);
  EXPECT_EQ(Count(m, "Pad"), 0);
  const auto& conv = m.graph().node(0);
  ASSERT_EQ(conv.op_type(), "Conv");
  EXPECT_EQ(conv.input(0), "x");
  const auto& pads = conv.attribute(0).name() == "pads" ? conv.attribute(0) : conv.attribute(1);
  EXPECT_EQ(std::vector<int64_t>(pads.ints().begin(), pads.ints().end()), (std::vector<int64_t>{1, 1, 1, 3}));
}

TEST(Canonicalize, LeavesPadsThatAreNotAConvsZeroPadding) {
  // Channel padding, a reflect Pad, a Pad read twice: none is the Conv's own padding.
  for (int variant = 0; variant < 3; ++variant) {
    GraphBuilder b;
    b.Input("x", {1, 4, 5, 5}).Weight("w", {6, variant == 0 ? 6 : 4, 3, 3}, 0.4f);
    b.Int64Initializer("p", variant == 0 ? std::vector<int64_t>{0, 1, 1, 1, 0, 1, 1, 1}
                                          : std::vector<int64_t>{0, 0, 1, 1, 0, 0, 1, 1});
    b.Node("Pad", {"x", "p"}, {"padded"}, "pad");
    b.Node("Conv", {"padded", "w"}, {"out"}, "conv").Output("out");
    if (variant == 2) b.Node("Relu", {"padded"}, {"side"}, "side").Output("side");
    onnx::ModelProto m = b.Build(17);
    if (variant == 1) {
      auto* mode = m.mutable_graph()->mutable_node(0)->add_attribute();
      mode->set_name("mode");
      mode->set_type(onnx::AttributeProto::STRING);
      mode->set_s("reflect");
    }
    EXPECT_FALSE(HasCanonicalFolds(m)) << "variant " << variant;
    EXPECT_EQ(Canonicalize(&m).pads_folded, 0) << "variant " << variant;
    EXPECT_EQ(Count(m, "Pad"), 1);
  }
}

}  // namespace
}  // namespace ptqkit
