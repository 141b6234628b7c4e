// The op-traits table: weight layouts (Gemm's transB, grouped Conv and ConvTranspose), data inputs,
// roles only in the default domain, and the columns other stages read.
#include "onnx/op_traits.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ptqkit {
namespace {

onnx::NodeProto Node(const std::string& op, int inputs = 2, const std::string& domain = "") {
  onnx::NodeProto n;
  n.set_op_type(op);
  n.set_domain(domain);
  for (int i = 0; i < inputs; ++i) n.add_input("in" + std::to_string(i));
  n.add_output("out");
  return n;
}

void SetInt(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

TEST(OpTraits, GroupedConvCountsEveryGroupsChannels) {
  onnx::NodeProto conv = Node("Conv");
  SetInt(&conv, "group", 2);
  const WeightLayout w = WeightLayoutOf(conv, std::vector<int64_t>{8, 4, 3, 3});  // [Cout, Cin / group, k, k]
  EXPECT_EQ(w.out_axis, 0);
  EXPECT_EQ(w.in_axis, 1);
  EXPECT_EQ(w.out_channels, 8);
  EXPECT_EQ(w.in_channels, 8);
}

TEST(OpTraits, ConvTransposeHasItsOutputChannelsOnAxisOne) {
  onnx::NodeProto deconv = Node("ConvTranspose");
  SetInt(&deconv, "group", 2);
  const WeightLayout w = WeightLayoutOf(deconv, std::vector<int64_t>{4, 3, 2, 2});  // [Cin, Cout / group, k, k]
  EXPECT_EQ(w.out_axis, 1);
  EXPECT_EQ(w.in_axis, 0);
  EXPECT_EQ(w.out_channels, 6);
  EXPECT_EQ(w.in_channels, 4);
}

TEST(OpTraits, GemmReadsTransBAndTransA) {
  onnx::NodeProto gemm = Node("Gemm", 3);
  WeightLayout w = WeightLayoutOf(gemm, std::vector<int64_t>{5, 7});  // [K, N]
  EXPECT_EQ(w.out_axis, 1);
  EXPECT_EQ(w.out_channels, 7);
  EXPECT_EQ(w.in_channels, 5);
  EXPECT_FALSE(w.transposed_input);
  SetInt(&gemm, "transB", 1);
  SetInt(&gemm, "transA", 1);
  w = WeightLayoutOf(gemm, std::vector<int64_t>{7, 5});  // [N, K]
  EXPECT_EQ(w.out_axis, 0);
  EXPECT_EQ(w.in_axis, 1);
  EXPECT_EQ(w.out_channels, 7);
  EXPECT_EQ(w.in_channels, 5);
  EXPECT_TRUE(w.transposed_input);
  EXPECT_EQ(WeightOutputAxis(gemm, 2), 0);
  EXPECT_EQ(WeightLayoutOf(gemm, std::vector<int64_t>{2, 7, 5}).out_axis, -1) << "Gemm takes matrices only";
}

TEST(OpTraits, MatMulWeightsUseTheirLastTwoAxes) {
  const WeightLayout w = WeightLayoutOf(Node("MatMul"), std::vector<int64_t>{2, 5, 7});
  EXPECT_EQ(w.out_axis, 2);
  EXPECT_EQ(w.in_axis, 1);
  EXPECT_EQ(w.out_channels, 7);
  EXPECT_EQ(w.in_channels, 5);
  EXPECT_EQ(WeightLayoutOf(Node("MatMul"), std::vector<int64_t>{7}).out_axis, -1) << "a vector has no layout";
  EXPECT_EQ(WeightLayoutOf(Node("Add"), std::vector<int64_t>{5, 7}).out_axis, -1) << "Add has no weight";
}

TEST(OpTraits, DataInputsLeaveOutShapesIndicesAndBiases) {
  EXPECT_EQ(DataInputIndices(Node("Where", 3)), (std::vector<int>{1, 2}));
  EXPECT_EQ(DataInputIndices(Node("Gemm", 3)), (std::vector<int>{0, 1}));
  EXPECT_EQ(DataInputIndices(Node("Reshape", 2)), (std::vector<int>{0}));
  EXPECT_EQ(DataInputIndices(Node("Add", 2)), (std::vector<int>{0, 1}));
  EXPECT_EQ(DataInputIndices(Node("Concat", 4)), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(DataInputIndices(Node("MyOp", 3, "my.domain")), (std::vector<int>{0, 1, 2})) << "unknown: all inputs";
}

TEST(OpTraits, OnlyTheDefaultDomainHasRoles) {
  EXPECT_TRUE(IsLinearOp(Node("Conv")));
  EXPECT_TRUE(IsLinearOp(Node("MatMul", 2, "ai.onnx")));
  EXPECT_FALSE(IsLinearOp(Node("Conv", 2, "com.microsoft")));
  EXPECT_FALSE(IsLinearOp(Node("Einsum")));
  EXPECT_TRUE(IsConvolution(Node("ConvTranspose")));
  EXPECT_FALSE(IsConvolution(Node("Gemm")));
  EXPECT_TRUE(IsQdqOp(Node("DequantizeLinear")));
  EXPECT_FALSE(IsQdqOp(Node("QuantizeLinear", 2, "com.microsoft")));
  EXPECT_EQ(TraitsOf(Node("Relu", 1, "custom")).role, OpRole::kOther);
}

TEST(OpTraits, SignColumnsDescribeWhatTheOpDoesToSigns) {
  EXPECT_TRUE(TraitsOf("Relu").Has(OpFlag::kNeverNegative));
  EXPECT_TRUE(TraitsOf("Softmax").Has(OpFlag::kNeverNegative));
  EXPECT_FALSE(TraitsOf("Clip").Has(OpFlag::kNeverNegative)) << "Clip's sign depends on its min";
  EXPECT_TRUE(TraitsOf("MaxPool").Has(OpFlag::kKeepsSign));
  EXPECT_FALSE(TraitsOf("Add").Has(OpFlag::kKeepsSign));
}

TEST(OpTraits, TheScanScopeIsTheSameListAsBeforeTheTable) {
  const std::vector<std::string> scope = {
      "Conv", "ConvTranspose", "Gemm", "MatMul", "Add", "Mul", "Sub", "Div", "MaxPool", "AveragePool",
      "GlobalAveragePool", "GlobalMaxPool", "Resize", "Pad", "Where", "ArgMax", "Einsum", "Relu", "LeakyRelu",
      "PRelu", "Clip", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Elu", "Selu", "Gelu", "Erf", "Softmax",
      "LogSoftmax", "Softplus", "Mish", "Pow", "Sqrt", "Exp", "BatchNormalization", "LayerNormalization",
      "InstanceNormalization", "GroupNormalization", "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceL2"};
  for (const auto& op : scope) EXPECT_TRUE(TraitsOf(op).Has(OpFlag::kSensitivityScope)) << op;
  for (const char* op : {"Reshape", "Transpose", "Concat", "Cast", "Gather", "QuantizeLinear", "Shape", "If"}) {
    EXPECT_FALSE(TraitsOf(op).Has(OpFlag::kSensitivityScope)) << op;
  }
}

}  // namespace
}  // namespace ptqkit
