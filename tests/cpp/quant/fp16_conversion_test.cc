// The rules of the low-precision conversion (--high_precision_dtype fp16|bf16), each on a tiny
// graph: which initializers change type, Casts at the graph boundary, direct_io_types, excluded
// op types, integer tensors, Q/DQ scales that would underflow, values beyond the fp16 range.
#include "quant/rewrite/fp16_conversion.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>

#include "onnx/float16.h"
#include "onnx/graph_builder.h"
#include "onnx/graph_index.h"
#include "onnx/model_prep.h"

namespace ptqkit {
namespace {

constexpr int32_t kF32 = onnx::TensorProto::FLOAT;
constexpr int32_t kF16 = onnx::TensorProto::FLOAT16;
constexpr int32_t kBF16 = onnx::TensorProto::BFLOAT16;

onnx::TensorProto* FindInit(onnx::ModelProto* m, const std::string& name) {
  for (auto& t : *m->mutable_graph()->mutable_initializer())
    if (t.name() == name) return &t;
  return nullptr;
}

int32_t InitType(onnx::ModelProto& m, const std::string& name) {
  auto* t = FindInit(&m, name);
  return t ? t->data_type() : -1;
}

void SetFloats(onnx::ModelProto* m, const std::string& name, const std::vector<float>& values) {
  auto* t = FindInit(m, name);
  ASSERT_NE(t, nullptr) << name;
  t->clear_float_data();
  for (float v : values) t->add_float_data(v);
}

// Adds a scalar float initializer (a Q/DQ scale) and an int8 scalar zero point.
void AddScaleAndZeroPoint(onnx::ModelProto* m, const std::string& scale, float value, const std::string& zp) {
  auto* s = m->mutable_graph()->add_initializer();
  s->set_name(scale);
  s->set_data_type(kF32);
  s->add_float_data(value);
  auto* z = m->mutable_graph()->add_initializer();
  z->set_name(zp);
  z->set_data_type(onnx::TensorProto::INT8);
  z->set_raw_data(std::string(1, '\0'));
}

const onnx::NodeProto* NodeNamed(const onnx::ModelProto& m, const std::string& name) {
  for (const auto& n : m.graph().node())
    if (n.name() == name) return &n;
  return nullptr;
}

// The node producing `tensor`, or nullptr.
const onnx::NodeProto* Producer(const onnx::ModelProto& m, const std::string& tensor) {
  for (const auto& n : m.graph().node())
    for (const auto& o : n.output())
      if (o == tensor) return &n;
  return nullptr;
}

int64_t CastTo(const onnx::NodeProto& n) { return IntAttribute(n, "to", -1); }

int CountOps(const onnx::ModelProto& m, const std::string& op) {
  int k = 0;
  for (const auto& n : m.graph().node()) k += n.op_type() == op;
  return k;
}

// x -> Q/DQ -> MatMul(w) -> Add(b) -> Relu -> Reshape(int64 shape) -> y
onnx::ModelProto QdqMatMulModel(int64_t opset = 17) {
  GraphBuilder b;
  b.Input("x", {2, 16}).Weight("w", {16, 16}).Weight("b", {16}).Int64Initializer("shape", {2, 4, 4});
  b.Node("QuantizeLinear", {"x", "x_scale", "x_zp"}, {"xq"}, "q");
  b.Node("DequantizeLinear", {"xq", "x_scale", "x_zp"}, {"xdq"}, "dq");
  b.Node("MatMul", {"xdq", "w"}, {"mm"}, "matmul");
  b.Node("Add", {"mm", "b"}, {"add"}, "add");
  b.Node("Relu", {"add"}, {"relu"}, "relu");
  b.Node("Reshape", {"relu", "shape"}, {"y"}, "reshape").Output("y");
  onnx::ModelProto m = b.Build(opset);
  AddScaleAndZeroPoint(&m, "x_scale", 0.05f, "x_zp");
  return m;
}

TEST(LowPrecision, FloatInitializersAndScalesBecomeFp16IntegersUntouched) {
  onnx::ModelProto m = QdqMatMulModel();
  const auto w_before = TensorToFloats(*FindInit(&m, "w"));
  const auto stats = ConvertToLowPrecision(&m, {});
  EXPECT_EQ(InitType(m, "w"), kF16);
  EXPECT_EQ(InitType(m, "b"), kF16);
  EXPECT_EQ(InitType(m, "x_scale"), kF16);
  EXPECT_EQ(InitType(m, "x_zp"), onnx::TensorProto::INT8);
  EXPECT_EQ(InitType(m, "shape"), onnx::TensorProto::INT64);
  EXPECT_EQ(stats.converted_initializers, 3);
  EXPECT_TRUE(stats.float32_nodes.empty());
  EXPECT_EQ(onnxio::DefaultOpset(m), 19);  // float16 Q/DQ scales need opset 19
  // Values are the round-to-nearest-even float16 of the originals.
  const auto w_after = TensorToFloats(*FindInit(&m, "w"));
  ASSERT_EQ(w_after.size(), w_before.size());
  for (size_t i = 0; i < w_before.size(); ++i) EXPECT_EQ(w_after[i], HalfToFloat(FloatToHalf(w_before[i])));
}

TEST(LowPrecision, GraphInputsAndOutputsKeepFloat32WithBoundaryCasts) {
  onnx::ModelProto m = QdqMatMulModel();
  const auto stats = ConvertToLowPrecision(&m, {});
  EXPECT_EQ(m.graph().input(0).type().tensor_type().elem_type(), kF32);
  EXPECT_EQ(m.graph().output(0).type().tensor_type().elem_type(), kF32);
  EXPECT_EQ(stats.casts_inserted, 2);
  // The first node casts the input to float16 and Q reads the cast.
  const auto& first = m.graph().node(0);
  EXPECT_EQ(first.op_type(), "Cast");
  EXPECT_EQ(first.input(0), "x");
  EXPECT_EQ(CastTo(first), kF16);
  EXPECT_EQ(NodeNamed(m, "q")->input(0), first.output(0));
  // The output keeps its name, produced by a Cast back to float32 from the renamed Reshape output.
  const auto* out = Producer(m, "y");
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->op_type(), "Cast");
  EXPECT_EQ(CastTo(*out), kF32);
  EXPECT_EQ(NodeNamed(m, "reshape")->output(0), out->input(0));
  EXPECT_EQ(m.graph().node(m.graph().node_size() - 1).output(0), "y");
}

TEST(LowPrecision, DirectIoTypesChangesTheGraphIoInstead) {
  onnx::ModelProto m = QdqMatMulModel();
  LowPrecisionOptions o;
  o.direct_io_types = true;
  const auto stats = ConvertToLowPrecision(&m, o);
  EXPECT_EQ(stats.casts_inserted, 0);
  EXPECT_EQ(CountOps(m, "Cast"), 0);
  EXPECT_EQ(m.graph().input(0).type().tensor_type().elem_type(), kF16);
  EXPECT_EQ(m.graph().output(0).type().tensor_type().elem_type(), kF16);
  EXPECT_EQ(NodeNamed(m, "q")->input(0), "x");
  EXPECT_EQ(NodeNamed(m, "reshape")->output(0), "y");
}

TEST(LowPrecision, ExcludedOpTypesRunInFloat32BetweenCasts) {
  onnx::ModelProto m = QdqMatMulModel();
  LowPrecisionOptions o;
  o.op_types_to_exclude = {"Relu"};
  const auto stats = ConvertToLowPrecision(&m, o);
  ASSERT_EQ(stats.float32_nodes, std::vector<std::string>{"relu"});
  const auto* relu = NodeNamed(m, "relu");
  const auto* in_cast = Producer(m, relu->input(0));
  ASSERT_NE(in_cast, nullptr);
  EXPECT_EQ(in_cast->op_type(), "Cast");
  EXPECT_EQ(CastTo(*in_cast), kF32);
  EXPECT_EQ(in_cast->input(0), "add");
  // The Reshape after it runs in float16 again, reading a Cast of Relu's float32 output.
  const auto* reshape_in = Producer(m, NodeNamed(m, "reshape")->input(0));
  ASSERT_NE(reshape_in, nullptr);
  EXPECT_EQ(reshape_in->op_type(), "Cast");
  EXPECT_EQ(CastTo(*reshape_in), kF16);
  EXPECT_EQ(reshape_in->input(0), "relu");
  EXPECT_EQ(InitType(m, "b"), kF16);
}

TEST(LowPrecision, InitializerReadByFloat32AndFp16NodesStaysFloat32) {
  GraphBuilder b;
  b.Input("x", {4}).Weight("c", {4});
  b.Node("Add", {"x", "c"}, {"a"}, "add");
  b.Node("Mul", {"a", "c"}, {"y"}, "mul").Output("y");
  onnx::ModelProto m = b.Build();
  LowPrecisionOptions o;
  o.op_types_to_exclude = {"Mul"};
  ConvertToLowPrecision(&m, o);
  EXPECT_EQ(InitType(m, "c"), kF32);
  const auto* add_c = Producer(m, NodeNamed(m, "add")->input(1));
  ASSERT_NE(add_c, nullptr);
  EXPECT_EQ(CastTo(*add_c), kF16);
  EXPECT_EQ(NodeNamed(m, "mul")->input(1), "c");
  EXPECT_EQ(NodeNamed(m, "mul")->output(0), "y");  // float32 op writing the output: no Cast
}

TEST(LowPrecision, ScaleThatUnderflowsKeepsItsQdqInFloat32) {
  onnx::ModelProto m = QdqMatMulModel();
  SetFloats(&m, "x_scale", {1e-6f});  // subnormal in float16 (below 2^-14)
  const auto stats = ConvertToLowPrecision(&m, {});
  EXPECT_EQ(InitType(m, "x_scale"), kF32);
  EXPECT_EQ(stats.float32_nodes, (std::vector<std::string>{"q", "dq"}));
  EXPECT_EQ(NodeNamed(m, "q")->input(0), "x");  // float32 graph input read directly
  const auto* mm_in = Producer(m, NodeNamed(m, "matmul")->input(0));
  ASSERT_NE(mm_in, nullptr);
  EXPECT_EQ(mm_in->op_type(), "Cast");
  EXPECT_EQ(CastTo(*mm_in), kF16);
  EXPECT_EQ(mm_in->input(0), "xdq");
  EXPECT_EQ(InitType(m, "w"), kF16);
}

TEST(LowPrecision, SmallestNormalScaleIsConverted) {
  onnx::ModelProto m = QdqMatMulModel();
  SetFloats(&m, "x_scale", {0x1p-14f});  // kDegenerateScale: exactly representable and normal
  EXPECT_TRUE(ConvertToLowPrecision(&m, {}).float32_nodes.empty());
  EXPECT_EQ(InitType(m, "x_scale"), kF16);
}

TEST(LowPrecision, ValuesBeyondFp16RangeAreClamped) {
  GraphBuilder b;
  b.Input("x", {3}).Weight("mask", {3});
  b.Node("Add", {"x", "mask"}, {"y"}, "add").Output("y");
  onnx::ModelProto m = b.Build();
  SetFloats(&m, "mask", {-3.4e38f, 1e5f, -INFINITY});
  ConvertToLowPrecision(&m, {});
  const auto v = TensorToFloats(*FindInit(&m, "mask"));
  EXPECT_EQ(v[0], -65504.0f);
  EXPECT_EQ(v[1], 65504.0f);
  EXPECT_EQ(v[2], -INFINITY);  // an infinity stays one
}

TEST(LowPrecision, ResizeScalesStayFloat32) {
  GraphBuilder b;
  b.Input("x", {1, 1, 2, 2}).Weight("roi", {8}).Weight("scales", {4});
  b.Node("Resize", {"x", "roi", "scales"}, {"y"}, "resize").Output("y");
  onnx::ModelProto m = b.Build();
  ConvertToLowPrecision(&m, {});
  EXPECT_EQ(InitType(m, "scales"), kF32);
  EXPECT_EQ(InitType(m, "roi"), kF16);
  EXPECT_EQ(NodeNamed(m, "resize")->input(2), "scales");
}

TEST(LowPrecision, CastToFloatBecomesCastToFp16AndConstantsConvert) {
  GraphBuilder b;
  b.Input("ids", {4}, onnx::TensorProto::INT64).ConstantWeight("k", {4});
  b.Node("Cast", {"ids"}, {"f"}, "cast", {{"to", {kF32}}});
  b.Node("Mul", {"f", "k"}, {"y"}, "mul").Output("y");
  onnx::ModelProto m = b.Build();
  ConvertToLowPrecision(&m, {});
  EXPECT_EQ(CastTo(*NodeNamed(m, "cast")), kF16);
  EXPECT_EQ(NodeNamed(m, "cast")->input(0), "ids");  // integer graph input: no boundary Cast
  EXPECT_EQ(m.graph().input(0).type().tensor_type().elem_type(), onnx::TensorProto::INT64);
  const auto* k = NodeNamed(m, "k_Constant");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->attribute(0).t().data_type(), kF16);
}

TEST(LowPrecision, CastToFloatFeedingOnlyFloat32OpsStaysFloat) {
  GraphBuilder b;
  b.Input("ids", {4}, onnx::TensorProto::INT64);
  b.Node("Cast", {"ids"}, {"y"}, "cast", {{"to", {kF32}}}).Output("y");
  onnx::ModelProto m = b.Build();
  ConvertToLowPrecision(&m, {});
  EXPECT_EQ(CastTo(*NodeNamed(m, "cast")), kF32);
  EXPECT_EQ(CountOps(m, "Cast"), 1);
}

TEST(LowPrecision, OtherDomainsAndUnknownTypesStayFloat32) {
  GraphBuilder b;
  b.Input("x", {4});
  b.Node("Relu", {"x"}, {"r"}, "relu");
  b.Node("MyOp", {"r"}, {"c"}, "custom");
  b.Node("Relu", {"c"}, {"y"}, "relu2").Output("y");
  onnx::ModelProto m = b.Build();
  m.mutable_graph()->mutable_node(1)->set_domain("com.example");
  auto* op = m.add_opset_import();
  op->set_domain("com.example");
  op->set_version(1);
  const auto stats = ConvertToLowPrecision(&m, {});
  // The custom op's output type is unknown, so the Relu after it stays float32 too.
  EXPECT_EQ(stats.float32_nodes, (std::vector<std::string>{"custom", "relu2"}));
  const auto* custom_in = Producer(m, NodeNamed(m, "custom")->input(0));
  ASSERT_NE(custom_in, nullptr);
  EXPECT_EQ(CastTo(*custom_in), kF32);
  EXPECT_EQ(m.opset_import(1).domain(), "com.example");
}

TEST(LowPrecision, GraphOutputAlsoReadInsideReadsTheFp16Version) {
  GraphBuilder b;
  b.Input("x", {4});
  b.Node("Relu", {"x"}, {"r"}, "relu").Output("r");
  b.Node("Neg", {"r"}, {"y"}, "neg").Output("y");
  onnx::ModelProto m = b.Build();
  ConvertToLowPrecision(&m, {});
  const std::string fp16_r = NodeNamed(m, "relu")->output(0);
  EXPECT_NE(fp16_r, "r");
  EXPECT_EQ(NodeNamed(m, "neg")->input(0), fp16_r);
  EXPECT_EQ(CastTo(*Producer(m, "r")), kF32);
  EXPECT_EQ(CastTo(*Producer(m, "y")), kF32);
}

TEST(LowPrecision, Bfloat16KeepsConvInFloat32AndConvertsMatMul) {
  GraphBuilder b;
  b.Input("x", {1, 4, 4, 4}).Weight("cw", {4, 4, 1, 1}).Weight("mw", {4, 4});
  b.Node("Conv", {"x", "cw"}, {"c"}, "conv");
  b.Node("MatMul", {"c", "mw"}, {"y"}, "matmul").Output("y");
  onnx::ModelProto m = b.Build();
  LowPrecisionOptions o;
  o.type = kBF16;
  const auto stats = ConvertToLowPrecision(&m, o);
  EXPECT_EQ(stats.float32_nodes, std::vector<std::string>{"conv"});  // ONNX Conv has no bfloat16
  EXPECT_EQ(InitType(m, "cw"), kF32);
  EXPECT_EQ(InitType(m, "mw"), kBF16);
  EXPECT_EQ(NodeNamed(m, "conv")->input(0), "x");
  EXPECT_EQ(CastTo(*Producer(m, NodeNamed(m, "matmul")->input(0))), kBF16);
}

TEST(LowPrecision, Bfloat16RoundsToNearestEven) {
  EXPECT_EQ(FloatToBfloat16(1.0f), 0x3f80);
  EXPECT_EQ(FloatToBfloat16(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // tie, even stays
  EXPECT_EQ(FloatToBfloat16(std::bit_cast<float>(0x3f818000u)), 0x3f82);  // tie, odd rounds up
  EXPECT_EQ(FloatToBfloat16(std::bit_cast<float>(0x3f808001u)), 0x3f81);
  EXPECT_TRUE(std::isnan(Bfloat16ToFloat(FloatToBfloat16(NAN))));
  EXPECT_EQ(Bfloat16ToFloat(FloatToBfloat16(-2.5f)), -2.5f);
}

TEST(LowPrecision, OutputIsDeterministic) {
  onnx::ModelProto a = QdqMatMulModel(), b = QdqMatMulModel();
  LowPrecisionOptions o;
  o.op_types_to_exclude = {"Add"};
  ConvertToLowPrecision(&a, o);
  ConvertToLowPrecision(&b, o);
  EXPECT_EQ(a.SerializeAsString(), b.SerializeAsString());
}

TEST(LowPrecision, OpTypeListsFollowTheSchemas) {
  const auto& fp16 = LowPrecisionOpTypes(kF16);
  const auto& bf16 = LowPrecisionOpTypes(kBF16);
  for (const char* op : {"Conv", "MatMul", "Gemm", "LayerNormalization", "Softmax", "Erf", "Resize", "ReduceMean",
                         "GlobalAveragePool", "BatchNormalization", "QuantizeLinear", "DequantizeLinear"}) {
    EXPECT_TRUE(fp16.count(op)) << op;
  }
  EXPECT_FALSE(fp16.count("Celu"));   // no float16 in ONNX
  EXPECT_FALSE(fp16.count("Range"));  // no float16 in ONNX
  EXPECT_FALSE(bf16.count("Conv"));
  EXPECT_FALSE(bf16.count("MaxPool"));
  EXPECT_TRUE(bf16.count("MatMul"));
}

}  // namespace
}  // namespace ptqkit
