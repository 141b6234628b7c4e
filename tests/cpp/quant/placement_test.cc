// One test per placement rule of DESIGN.md, each on a tiny graph built in the test.
#include "quant/placement/placement.h"

#include <gtest/gtest.h>

#include "onnx/graph_builder.h"
#include "onnx/graph_index.h"

namespace ptqkit {
namespace {

struct Planned {
  onnx::ModelProto model;
  Placement plan;
  const QuantizedTensor* Find(const std::string& tensor) const {
    for (const auto& t : plan.tensors)
      if (t.tensor == tensor) return &t;
    return nullptr;
  }
  bool NodeQuantized(const std::string& name) const {
    GraphIndex g(model.graph());
    const int i = g.FindNode(name);
    return std::find(plan.quantized_nodes.begin(), plan.quantized_nodes.end(), i) != plan.quantized_nodes.end();
  }
  std::string Reason(const std::string& name) const {
    GraphIndex g(model.graph());
    auto it = plan.float_reasons.find(g.FindNode(name));
    return it == plan.float_reasons.end() ? "" : it->second;
  }
};

Planned Plan(GraphBuilder b, const PlacementOptions& options = {}) {
  Planned p{b.Build(), {}};
  GraphIndex g(p.model.graph());
  p.plan = PlanPlacement(g, options);
  return p;
}

// x -> Conv(w 32x16x3x3) -> y -> Relu -> out
GraphBuilder ConvModel() {
  GraphBuilder b;
  b.Input("x", {1, 16, 8, 8}).Weight("w", {32, 16, 3, 3}).Weight("bias", {32});
  b.Node("Conv", {"x", "w", "bias"}, {"y"}, "conv", {{"pads", {1, 1, 1, 1}}});
  b.Node("Relu", {"y"}, {"out"}, "relu").Output("out");
  return b;
}

TEST(Placement, ConvInputAndPerChannelWeightNoOutputNoBias) {
  auto p = Plan(ConvModel());
  ASSERT_NE(p.Find("x"), nullptr);
  EXPECT_FALSE(p.Find("x")->is_weight);
  EXPECT_EQ(p.Find("x")->axis, -1);
  ASSERT_NE(p.Find("w"), nullptr);
  EXPECT_TRUE(p.Find("w")->is_weight);
  EXPECT_EQ(p.Find("w")->axis, 0);
  EXPECT_EQ(p.Find("bias"), nullptr);
  EXPECT_EQ(p.Find("y"), nullptr);  // never an output Q/DQ
  EXPECT_EQ(p.plan.tensors.size(), 2u);
}

TEST(Placement, ConvTransposeWeightAxisIsOne) {
  GraphBuilder b;
  b.Input("x", {1, 16, 8, 8}).Weight("w", {16, 32, 2, 2});
  b.Node("ConvTranspose", {"x", "w"}, {"y"}, "deconv", {{"strides", {2, 2}}});
  b.Node("Relu", {"y"}, {"out"}).Output("out");
  auto p = Plan(b);
  ASSERT_NE(p.Find("w"), nullptr);
  EXPECT_EQ(p.Find("w")->axis, 1);
}

TEST(Placement, GemmAndMatMulWeightAxes) {
  GraphBuilder b;
  b.Input("x", {4, 32}).Weight("wt", {64, 32}).Weight("c", {64}).Weight("w2", {64, 48}).Weight("w3", {64, 32});
  b.Node("Gemm", {"x", "wt", "c"}, {"h"}, "gemm_tb", {{"transB", {1}}});
  b.Node("MatMul", {"h", "w2"}, {"h2"}, "matmul");
  b.Node("Gemm", {"h2", "w3"}, {"h3"}, "gemm_plain");  // [K=64? no: 48 x ...] shape only matters for axes
  b.Node("Relu", {"h3"}, {"out"}).Output("out");
  auto p = Plan(b);
  EXPECT_EQ(p.Find("wt")->axis, 0);  // transB: [N, K]
  EXPECT_EQ(p.Find("w2")->axis, 1);  // MatMul [K, N]
  EXPECT_EQ(p.Find("w3")->axis, 1);  // Gemm without transB: [K, N]
  EXPECT_EQ(p.Find("c"), nullptr);   // bias stays float
}

TEST(Placement, ConvBnReluMaxPoolEpilogueUntouched) {
  GraphBuilder b;
  b.Input("x", {1, 16, 8, 8}).Weight("w", {32, 16, 3, 3}).Weight("w2", {32, 32, 3, 3});
  b.Weight("s", {32}).Weight("bb", {32}).Weight("m", {32}).Weight("v", {32}, 0.5f);
  b.Node("Conv", {"x", "w"}, {"c"}, "conv1", {{"pads", {1, 1, 1, 1}}});
  b.Node("BatchNormalization", {"c", "s", "bb", "m", "v"}, {"bn"}, "bn");
  b.Node("Relu", {"bn"}, {"r"}, "relu");
  b.Node("MaxPool", {"r"}, {"p"}, "pool", {{"kernel_shape", {2, 2}}, {"strides", {2, 2}}});
  b.Node("Conv", {"p", "w2"}, {"c2"}, "conv2", {{"pads", {1, 1, 1, 1}}});
  b.Node("Relu", {"c2"}, {"out"}).Output("out");
  auto p = Plan(b);
  EXPECT_EQ(p.Find("c"), nullptr);
  EXPECT_EQ(p.Find("bn"), nullptr);
  EXPECT_EQ(p.Find("r"), nullptr);  // MaxPool input inside the epilogue
  ASSERT_NE(p.Find("p"), nullptr);  // ...but its output feeds a quantized Conv
  EXPECT_FALSE(p.NodeQuantized("pool"));
  EXPECT_TRUE(p.NodeQuantized("conv2"));
}

TEST(Placement, ResidualAddQuantizesSkipInputOnly) {
  GraphBuilder b;
  b.Input("x", {1, 16, 8, 8}).Weight("w", {16, 16, 3, 3});
  b.Node("Relu", {"x"}, {"skip"}, "pre");
  b.Node("Conv", {"skip", "w"}, {"c"}, "conv", {{"pads", {1, 1, 1, 1}}});
  b.Node("Add", {"c", "skip"}, {"sum"}, "add");
  b.Node("Relu", {"sum"}, {"out"}).Output("out");
  auto p = Plan(b);
  EXPECT_TRUE(p.NodeQuantized("add"));
  EXPECT_EQ(p.Find("c"), nullptr);
  const auto* skip = p.Find("skip");
  ASSERT_NE(skip, nullptr);
  // One shared Q/DQ: the Conv and the Add read the same quantized skip tensor.
  EXPECT_EQ(skip->uses.size(), 2u);
}

TEST(Placement, ResidualAddWithTwoConvBranchesQuantizesTheEarlierBranch) {
  GraphBuilder b;
  b.Input("x", {1, 16, 8, 8}).Weight("wd", {16, 16, 1, 1}).Weight("w", {16, 16, 3, 3});
  b.Node("Conv", {"x", "wd"}, {"down"}, "downsample");
  b.Node("Conv", {"x", "w"}, {"main"}, "conv", {{"pads", {1, 1, 1, 1}}});
  b.Node("Add", {"main", "down"}, {"sum"}, "add");
  b.Node("Relu", {"sum"}, {"out"}).Output("out");
  auto p = Plan(b);
  EXPECT_NE(p.Find("down"), nullptr);
  EXPECT_EQ(p.Find("main"), nullptr);
}

TEST(Placement, AddWithoutConvBranchIsNotQuantized) {
  GraphBuilder b;
  b.Input("x", {1, 16}).Input("y", {1, 16});
  b.Node("Add", {"x", "y"}, {"s"}, "add");
  b.Node("Relu", {"s"}, {"out"}).Output("out");
  auto p = Plan(b);
  EXPECT_TRUE(p.plan.tensors.empty());
}

TEST(Placement, PoolingOnlyNextToQuantizedOps) {
  GraphBuilder b;
  b.Input("x", {1, 16, 8, 8}).Weight("w", {32, 16, 3, 3});
  b.Node("AveragePool", {"x"}, {"p"}, "pool_feeding_conv", {{"kernel_shape", {2, 2}}});
  b.Node("Conv", {"p", "w"}, {"c"}, "conv");
  b.Node("Relu", {"c"}, {"r"}, "relu");
  b.Node("GlobalAveragePool", {"r"}, {"g"}, "pool_to_output_path");
  b.Node("Flatten", {"g"}, {"out"}, "flatten").Output("out");
  auto p = Plan(b);
  EXPECT_TRUE(p.NodeQuantized("pool_feeding_conv"));
  EXPECT_NE(p.Find("x"), nullptr);
  EXPECT_FALSE(p.NodeQuantized("pool_to_output_path"));
}

TEST(Placement, ResizeAfterConvGroupGetsInputQdq) {
  GraphBuilder b;
  b.Input("x", {1, 16, 8, 8}).Weight("w", {16, 16, 3, 3}).Weight("w2", {16, 16, 3, 3});
  b.Node("Conv", {"x", "w"}, {"c"}, "conv", {{"pads", {1, 1, 1, 1}}});
  b.Node("Relu", {"c"}, {"r"}, "relu");
  b.Node("Resize", {"r", "", "scales"}, {"up"}, "resize");
  b.Node("Conv", {"up", "w2"}, {"c2"}, "conv2");
  b.Node("Relu", {"c2"}, {"out"}).Output("out");
  auto p = Plan(b);
  EXPECT_TRUE(p.NodeQuantized("resize"));
  EXPECT_NE(p.Find("r"), nullptr);
}

TEST(Placement, LayerNormFedByConvGetsInputQdqButNotWhenFedByMatMul) {
  GraphBuilder b;
  b.Input("x", {1, 16, 4, 4}).Weight("w", {32, 16, 1, 1}).Weight("g", {32}).Weight("be", {32});
  b.Weight("wm", {32, 32}).Weight("g2", {32}).Weight("b2", {32});
  b.Int64Initializer("shape", {1, 32, 16});
  b.Node("Conv", {"x", "w"}, {"c"}, "conv");
  b.Node("Reshape", {"c", "shape"}, {"flat"}, "reshape");
  b.Node("Transpose", {"flat"}, {"t"}, "transpose", {{"perm", {0, 2, 1}}});
  b.Node("LayerNormalization", {"t", "g", "be"}, {"ln"}, "ln_after_conv", {{"axis", {-1}}});
  b.Node("MatMul", {"ln", "wm"}, {"mm"}, "matmul");
  b.Node("LayerNormalization", {"mm", "g2", "b2"}, {"ln2"}, "ln_after_matmul", {{"axis", {-1}}});
  b.Node("Relu", {"ln2"}, {"out"}).Output("out");
  auto p = Plan(b);
  EXPECT_TRUE(p.NodeQuantized("ln_after_conv"));
  EXPECT_FALSE(p.NodeQuantized("ln_after_matmul"));
}

TEST(Placement, GeluChainAndAttentionCoreLeftAlone) {
  GraphBuilder b;
  b.Input("q", {1, 16, 32}).Input("k", {1, 32, 16}).Input("v", {1, 16, 32}).Weight("wo", {32, 32});
  b.Node("MatMul", {"q", "k"}, {"s"}, "qk");
  b.Node("Div", {"s", "d"}, {"sd"}, "scale");
  b.Node("Softmax", {"sd"}, {"p"}, "softmax", {{"axis", {-1}}});
  b.Node("MatMul", {"p", "v"}, {"ctx"}, "pv");
  b.Node("MatMul", {"ctx", "wo"}, {"o"}, "proj");
  // GELU as torch exports it: x * 0.5 * (1 + erf(x / sqrt 2))
  b.Node("Div", {"o", "sqrt2"}, {"g1"}, "gelu_div");
  b.Node("Erf", {"g1"}, {"g2"}, "gelu_erf");
  b.Node("Add", {"g2", "one"}, {"g3"}, "gelu_add");
  b.Node("Mul", {"o", "g3"}, {"g4"}, "gelu_mul");
  b.Node("Mul", {"g4", "half"}, {"g5"}, "gelu_mul2");
  b.Node("Relu", {"g5"}, {"out"}).Output("out");
  b.Weight("d", {}, 1.0f).Weight("sqrt2", {}, 1.0f).Weight("one", {}, 1.0f).Weight("half", {}, 1.0f);
  auto p = Plan(b);
  EXPECT_FALSE(p.NodeQuantized("qk"));
  EXPECT_FALSE(p.NodeQuantized("pv"));
  EXPECT_EQ(p.Reason("qk"), "attention core MatMul");
  EXPECT_TRUE(p.NodeQuantized("proj"));
  for (const char* n : {"gelu_div", "gelu_erf", "gelu_add", "gelu_mul", "gelu_mul2", "softmax", "scale"}) {
    EXPECT_FALSE(p.NodeQuantized(n)) << n;
  }
}

TEST(Placement, GraphOutputProducerSkipped) {
  GraphBuilder b;
  b.Input("x", {4, 32}).Weight("w", {32, 32});
  b.Node("MatMul", {"x", "w"}, {"out"}, "head").Output("out");
  auto p = Plan(b);
  EXPECT_TRUE(p.plan.tensors.empty());
  EXPECT_EQ(p.Reason("head"), "produces a graph output");
}

TEST(Placement, OneSharedQdqPerTensor) {
  GraphBuilder b;
  b.Input("x", {1, 16, 8, 8}).Weight("w1", {16, 16, 1, 1}).Weight("w2", {16, 16, 1, 1});
  b.Node("Conv", {"x", "w1"}, {"a"}, "c1").Node("Conv", {"x", "w2"}, {"b"}, "c2");
  b.Node("Add", {"a", "b"}, {"s"}, "add").Node("Relu", {"s"}, {"out"}).Output("out");
  auto p = Plan(b);
  int count = 0;
  for (const auto& t : p.plan.tensors) count += t.tensor == "x";
  EXPECT_EQ(count, 1);
  EXPECT_EQ(p.Find("x")->uses.size(), 2u);
}

TEST(Placement, ConcatInputsShareOneScale) {
  GraphBuilder b;
  b.Input("x", {1, 8, 8, 8}).Input("y", {1, 8, 8, 8}).Weight("w", {16, 16, 1, 1});
  b.Node("Relu", {"x"}, {"a"}).Node("Relu", {"y"}, {"b"});
  b.Node("Concat", {"a", "b"}, {"cat"}, "concat", {{"axis", {1}}});
  b.Node("Conv", {"cat", "w"}, {"c"}, "conv").Node("Relu", {"c"}, {"out"}).Output("out");
  auto p = Plan(b);
  ASSERT_NE(p.Find("a"), nullptr);
  ASSERT_NE(p.Find("b"), nullptr);
  EXPECT_EQ(p.Find("a")->scale_group, "cat");
  EXPECT_EQ(p.Find("b")->scale_group, "cat");
  EXPECT_EQ(p.Find("cat")->scale_group, "cat");
}

TEST(Placement, SmallGemmAndGemvExcluded) {
  GraphBuilder b;
  b.Input("x", {4, 32}).Weight("narrow", {32, 8}).Weight("gemv", {8, 1}).Weight("big", {8, 32});
  b.Node("MatMul", {"x", "narrow"}, {"h"}, "small_n");
  b.Node("MatMul", {"h", "gemv"}, {"g"}, "gemv");
  b.Node("Relu", {"g"}, {"out"}).Output("out");
  auto p = Plan(b);
  EXPECT_FALSE(p.NodeQuantized("small_n"));
  EXPECT_FALSE(p.NodeQuantized("gemv"));
  EXPECT_NE(p.Reason("small_n").find("small GEMM"), std::string::npos);
}

TEST(Placement, SmallChannelConvExcluded) {
  GraphBuilder b;
  b.Input("x", {1, 3, 8, 8}).Weight("w", {16, 3, 3, 3});
  b.Node("Conv", {"x", "w"}, {"c"}, "stem").Node("Relu", {"c"}, {"out"}).Output("out");
  auto p = Plan(b);
  EXPECT_FALSE(p.NodeQuantized("stem"));
  EXPECT_NE(p.Reason("stem").find("small-channel"), std::string::npos);
}

// FP8 counts a grouped Conv's channels per group (the weight's dims), as ModelOpt's FP8 mode does:
// a depthwise Conv has one input channel per group and stays float; INT8 quantizes it.
TEST(Placement, Fp8LeavesDepthwiseConvsInFloat) {
  GraphBuilder b;
  b.Input("x", {1, 32, 8, 8}).Weight("wd", {32, 1, 3, 3}).Weight("wg", {64, 16, 3, 3}).Weight("wp", {32, 64, 1, 1});
  b.Node("Conv", {"x", "wd"}, {"d"}, "depthwise", {{"group", {32}}, {"pads", {1, 1, 1, 1}}});
  b.Node("Relu", {"d"}, {"r"}, "relu");
  b.Node("Conv", {"r", "wg"}, {"g"}, "grouped", {{"group", {2}}, {"pads", {1, 1, 1, 1}}});
  b.Node("Conv", {"g", "wp"}, {"out"}, "pointwise").Output("out");
  PlacementOptions fp8;
  fp8.format = &FindFormat("fp8", "--quantize_mode");
  auto p = Plan(b, fp8);
  EXPECT_FALSE(p.NodeQuantized("depthwise"));
  EXPECT_NE(p.Reason("depthwise").find("grouped conv (group 32: weight channels 1 in, 32 out"), std::string::npos)
      << p.Reason("depthwise");
  EXPECT_FALSE(p.NodeQuantized("grouped"));  // 16 input channels per group: below FP8's 17
  EXPECT_NE(p.Reason("grouped").find("group 2: weight channels 16 in, 64 out"), std::string::npos) << p.Reason("grouped");
  auto i8 = Plan(b);
  EXPECT_TRUE(i8.NodeQuantized("depthwise"));
  EXPECT_TRUE(i8.NodeQuantized("grouped"));
}

TEST(Placement, ConstantNodeWeightsAreWeights) {
  GraphBuilder b;
  b.Input("x", {1, 16, 8, 8}).ConstantWeight("w", {32, 16, 3, 3});
  b.Node("Conv", {"x", "w"}, {"c"}, "conv").Node("Relu", {"c"}, {"out"}).Output("out");
  auto p = Plan(b);
  ASSERT_NE(p.Find("w"), nullptr);
  EXPECT_TRUE(p.Find("w")->is_weight);
  EXPECT_EQ(p.Find("w")->axis, 0);
}

GraphBuilder TwoMatMuls() {
  GraphBuilder b;
  b.Input("x", {4, 32}).Weight("w0", {32, 32}).Weight("w1", {32, 32});
  b.Node("MatMul", {"x", "w0"}, {"h"}, "/l/MatMul");
  b.Node("MatMul", {"h", "w1"}, {"h1"}, "/l/MatMul_1");
  b.Node("Relu", {"h1"}, {"out"}, "/l/Relu").Output("out");
  return b;
}

// --target_runtime ort_cpu (quant/placement/runtime_forms.h): a ResNet-style block as ONNX Runtime fuses it.
// x -> Conv1 -> Relu -> MaxPool -> Conv2 -> Add(+ pooled) -> Relu -> Conv3 -> Sigmoid -> out
GraphBuilder ResidualBlock() {
  GraphBuilder b;
  b.Input("x", {1, 16, 8, 8}).Weight("w1", {16, 16, 3, 3}).Weight("w2", {16, 16, 3, 3}).Weight("w3", {16, 16, 1, 1});
  b.Node("Conv", {"x", "w1"}, {"c1"}, "conv1", {{"pads", {1, 1, 1, 1}}});
  b.Node("Relu", {"c1"}, {"r1"}, "relu1");
  b.Node("MaxPool", {"r1"}, {"pooled"}, "pool", {{"kernel_shape", {2, 2}}, {"strides", {2, 2}}});
  b.Node("Conv", {"pooled", "w2"}, {"c2"}, "conv2", {{"pads", {1, 1, 1, 1}}});
  b.Node("Add", {"c2", "pooled"}, {"sum"}, "residual");
  b.Node("Relu", {"sum"}, {"r2"}, "relu2");
  b.Node("Conv", {"r2", "w3"}, {"c3"}, "conv3");
  b.Node("Sigmoid", {"c3"}, {"out"}, "sigmoid").Output("out");
  return b;
}

TEST(Placement, OrtCpuFormQuantizesKernelOutputsAndTheOpsBetweenKernels) {
  PlacementOptions o;
  o.runtime = &FindRuntimeForm("ort_cpu");
  auto p = Plan(ResidualBlock(), o);
  // Each Conv's output after the Relu ONNX Runtime folds into the uint8 Q; conv3's before Sigmoid.
  for (const char* t : {"r1", "c2", "r2", "c3"}) ASSERT_NE(p.Find(t), nullptr) << t;
  EXPECT_EQ(p.Find("c1"), nullptr);  // inside the Conv -> Relu kernel
  // The residual Add sits between kernels: both inputs and its output (after the Relu) quantized.
  EXPECT_TRUE(p.NodeQuantized("residual"));
  ASSERT_NE(p.Find("pooled"), nullptr);
  EXPECT_EQ(p.Find("pooled")->uses.size(), 2u);  // conv2 and the Add share one pair
  // MaxPool moves integers: its input and output share one scale.
  EXPECT_FALSE(p.Find("pooled")->scale_group.empty());
  EXPECT_EQ(p.Find("pooled")->scale_group, p.Find("r1")->scale_group);
  // Relu and MaxPool-of-Relu outputs are never negative; a Conv's raw output may be.
  EXPECT_TRUE(p.Find("r1")->non_negative);
  EXPECT_TRUE(p.Find("pooled")->non_negative);
  EXPECT_TRUE(p.Find("r2")->non_negative);
  EXPECT_FALSE(p.Find("c2")->non_negative);
  EXPECT_FALSE(p.Find("c3")->non_negative);
}

TEST(Placement, TrtFormOfTheSameBlockIsUnchanged) {
  auto p = Plan(ResidualBlock());
  for (const char* t : {"c2", "sum", "c3"}) EXPECT_EQ(p.Find(t), nullptr) << t;  // no output Q/DQ
  ASSERT_NE(p.Find("pooled"), nullptr);
  EXPECT_TRUE(p.Find("pooled")->scale_group.empty());
  EXPECT_FALSE(p.Find("pooled")->non_negative);  // only forms with unsigned activations mark it
}

TEST(Selectors, ExactNameDoesNotWidenToPrefix) {
  PlacementOptions o;
  o.nodes_to_exclude = {"/l/MatMul"};
  auto p = Plan(TwoMatMuls(), o);
  EXPECT_FALSE(p.NodeQuantized("/l/MatMul"));
  EXPECT_TRUE(p.NodeQuantized("/l/MatMul_1"));
  EXPECT_NE(p.Reason("/l/MatMul").find("excluded by user"), std::string::npos);
}

TEST(Selectors, NonExactSelectorIsRegexFromStart) {
  PlacementOptions o;
  o.nodes_to_exclude = {"/l/Mat"};
  auto p = Plan(TwoMatMuls(), o);
  EXPECT_FALSE(p.NodeQuantized("/l/MatMul"));
  EXPECT_FALSE(p.NodeQuantized("/l/MatMul_1"));
  o.nodes_to_exclude = {"MatMul"};  // anchored at the start: matches nothing
  auto q = Plan(TwoMatMuls(), o);
  EXPECT_TRUE(q.NodeQuantized("/l/MatMul"));
}

TEST(Selectors, OpTypesToExclude) {
  PlacementOptions o;
  o.op_types_to_exclude = {"MatMul"};
  auto p = Plan(TwoMatMuls(), o);
  EXPECT_TRUE(p.plan.tensors.empty());
}

TEST(Selectors, OpTypesToQuantizeBypassesRules) {
  PlacementOptions o;
  o.op_types_to_quantize = {"Relu"};
  auto p = Plan(TwoMatMuls(), o);
  EXPECT_TRUE(p.NodeQuantized("/l/Relu"));  // the rules would never quantize a Relu
  EXPECT_FALSE(p.NodeQuantized("/l/MatMul"));
  ASSERT_EQ(p.plan.tensors.size(), 1u);
  EXPECT_EQ(p.plan.tensors[0].tensor, "h1");
}

TEST(Selectors, NodesToQuantizeTakesPrecedenceThenExclusionsApply) {
  PlacementOptions o;
  o.nodes_to_quantize = {"/l/"};
  o.op_types_to_quantize = {"Relu"};
  o.nodes_to_exclude = {"/l/MatMul_1"};
  auto p = Plan(TwoMatMuls(), o);
  EXPECT_TRUE(p.NodeQuantized("/l/MatMul"));
  EXPECT_FALSE(p.NodeQuantized("/l/MatMul_1"));
  EXPECT_TRUE(p.NodeQuantized("/l/Relu"));
}

// What a search keeps in float is named exactly, with its own reason, and never read as a pattern:
// a budget choice "/l/Mat" (a node of another scope, say) must not take "/l/MatMul*" with it.
TEST(Selectors, KeptInFloatIsExactAndCarriesItsReason) {
  PlacementOptions o;
  o.kept_in_float = {{"/l/MatMul", "kept in float by --accuracy_budget"}};
  auto p = Plan(TwoMatMuls(), o);
  EXPECT_FALSE(p.NodeQuantized("/l/MatMul"));
  EXPECT_TRUE(p.NodeQuantized("/l/MatMul_1"));
  EXPECT_EQ(p.Reason("/l/MatMul"), "kept in float by --accuracy_budget");
  o.kept_in_float = {{"/l/Mat", "kept in float by --accuracy_budget"}};
  auto q = Plan(TwoMatMuls(), o);
  EXPECT_TRUE(q.NodeQuantized("/l/MatMul"));
  EXPECT_TRUE(q.NodeQuantized("/l/MatMul_1"));
}

TEST(Selectors, InvalidRegexIsAnError) {
  PlacementOptions o;
  o.nodes_to_exclude = {"/l/(unclosed"};
  EXPECT_THROW(Plan(TwoMatMuls(), o), std::exception);
}

}  // namespace
}  // namespace ptqkit
