// Node naming, model checks and opset upgrades (DESIGN.md "Model input and output").
#include "onnx/model_prep.h"
#include "onnx/onnx_library.h"

#include <gtest/gtest.h>

#include "onnx/graph_builder.h"
#include "ptqkit/error.h"

namespace ptqkit {
namespace {

using onnxio::AssignNodeNames;
using onnxio::CheckModel;
using onnxio::DefaultOpset;
using onnxio::UpgradeOpset;

const onnx::AttributeProto* Attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

TEST(AssignNodeNames, UnnamedNodesGetUniqueStableNamesAndDuplicatesAreRenamed) {
  GraphBuilder b;
  b.Input("x", {1, 4}).Node("Relu", {"x"}, {"a"}, "Relu_0").Node("Relu", {"a"}, {"b"}, "dup");
  b.Node("Relu", {"b"}, {"c"}, "dup").Node("Relu", {"c"}, {"out"}, "x").Output("out");
  auto m = b.Build();
  m.mutable_graph()->mutable_node(0)->clear_name();
  m.mutable_graph()->mutable_node(3)->clear_name();
  AssignNodeNames(m.mutable_graph());
  // "Relu_0" is taken by nobody after clearing; the second unnamed Relu continues the count.
  EXPECT_EQ(m.graph().node(0).name(), "Relu_0");
  EXPECT_EQ(m.graph().node(1).name(), "dup");
  EXPECT_EQ(m.graph().node(2).name(), "dup_dup1");
  EXPECT_EQ(m.graph().node(3).name(), "Relu_1");
  auto again = m;
  AssignNodeNames(again.mutable_graph());  // stable: a second pass changes nothing
  EXPECT_EQ(again.SerializeAsString(), m.SerializeAsString());
}

TEST(CheckModel, RefusesOldIrQdqModelsAndTooNewOpsets) {
  GraphBuilder b;
  b.Input("x", {1, 4}).Node("Relu", {"x"}, {"out"}).Output("out");
  auto ok = b.Build(17);
  EXPECT_NO_THROW(CheckModel(ok, "m.onnx"));
  auto old_ir = ok;
  old_ir.set_ir_version(6);  // MiniLM exports are IR 6: accepted, the upgrade raises it
  EXPECT_NO_THROW(CheckModel(old_ir, "m.onnx"));
  old_ir.set_ir_version(2);
  EXPECT_THROW(CheckModel(old_ir, "m.onnx"), Error);
  EXPECT_THROW(CheckModel(b.Build(22), "m.onnx"), Error);
  GraphBuilder q;
  q.Input("x", {1, 4}).Weight("s", {}, 1.0f).Node("QuantizeLinear", {"x", "s"}, {"out"}, "q").Output("out");
  try {
    CheckModel(q.Build(), "m.onnx");
    FAIL() << "a Q/DQ model must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("already quantized"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("'q'"), std::string::npos);
  }
}

// The ONNX library's version converter does the upgrades; these tests pin what ptqkit relies on.
const onnx::NodeProto* FindOp(const onnx::ModelProto& m, const std::string& op) {
  for (const auto& n : m.graph().node()) {
    if (n.op_type() == op) return &n;
  }
  return nullptr;
}

TEST(UpgradeOpset, AxesAndSplitAttributesBecomeInputsAt13) {
  GraphBuilder b;
  b.Input("x", {2, 1, 4});
  b.Node("Squeeze", {"x"}, {"s"}, "squeeze", {{"axes", {1}}});
  b.Node("ReduceSum", {"s"}, {"r"}, "sum", {{"axes", {1}}, {"keepdims", {1}}});
  b.Node("Split", {"r"}, {"p", "q"}, "split", {{"axis", {0}}, {"split", {1, 1}}});
  b.Node("Softmax", {"p"}, {"out"}, "softmax", {{"axis", {-1}}}).Output("out");
  auto m = b.Build(11);
  EXPECT_EQ(UpgradeOpset(&m, 13), 11);
  EXPECT_EQ(DefaultOpset(m), 13);
  EXPECT_GE(m.ir_version(), 7);
  for (const char* op : {"Squeeze", "ReduceSum", "Split"}) {
    const auto* n = FindOp(m, op);
    ASSERT_NE(n, nullptr) << op;
    EXPECT_EQ(Attr(*n, "axes"), nullptr) << op;
    EXPECT_EQ(Attr(*n, "split"), nullptr) << op;
    EXPECT_EQ(n->input_size(), 2) << op;
  }
}

TEST(UpgradeOpset, Opset12SoftmaxOverSeveralAxesKeepsItsMeaning) {
  // Softmax before 13 normalises over axes 1.. (flattened); at 13 over one axis. The converter
  // must not simply relabel the node: it reshapes around it.
  GraphBuilder b;
  b.Input("x", {2, 3, 4}).Node("Softmax", {"x"}, {"out"}, "my_softmax").Output("out");  // default axis 1
  auto m = b.Build(12);
  UpgradeOpset(&m, 13);
  EXPECT_EQ(DefaultOpset(m), 13);
  EXPECT_GT(m.graph().node_size(), 1);
  ASSERT_NE(FindOp(m, "Softmax"), nullptr);
}

TEST(UpgradeOpset, ClipAttributesBecomeInputsBelow11AndReduceAxesAt18) {
  GraphBuilder b;
  b.Input("x", {2, 4});
  b.Node("Clip", {"x"}, {"c"}, "clip", {}, {{"min", 0.0f}, {"max", 6.0f}});
  b.Node("ReduceMean", {"c"}, {"out"}, "mean", {{"axes", {1}}}).Output("out");
  auto m = b.Build(10);
  UpgradeOpset(&m, 19);
  EXPECT_EQ(DefaultOpset(m), 19);
  EXPECT_GE(m.ir_version(), 9);
  const auto* clip = FindOp(m, "Clip");
  ASSERT_NE(clip, nullptr);
  EXPECT_EQ(clip->input_size(), 3);
  EXPECT_EQ(Attr(*clip, "min"), nullptr);
  const auto* mean = FindOp(m, "ReduceMean");
  ASSERT_NE(mean, nullptr);
  EXPECT_EQ(mean->input_size(), 2);
  EXPECT_EQ(Attr(*mean, "axes"), nullptr);
}

TEST(UpgradeOpset, Opset9UpsampleBecomesResize) {
  // The OCR exports of issue 8 are opset 9 with Upsample and attribute-style Slice.
  GraphBuilder b;
  b.Input("x", {1, 1, 2, 2}).Weight("scales", {4}, 1.0f).Node("Upsample", {"x", "scales"}, {"out"}, "up").Output("out");
  auto m = b.Build(9);
  EXPECT_EQ(UpgradeOpset(&m, 13), 9);
  EXPECT_EQ(FindOp(m, "Upsample"), nullptr);
  EXPECT_NE(FindOp(m, "Resize"), nullptr);
}

TEST(UpgradeOpset, RefusalIsAPtqkitErrorNamingTheOpsets) {
  GraphBuilder b;
  b.Input("x", {1, 4}).Node("NoSuchOp", {"x"}, {"out"}, "weird").Output("out");
  auto m = b.Build(9);
  try {
    UpgradeOpset(&m, 13);
    FAIL() << "an unknown op cannot be converted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("from opset 9 to 13"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ptqkit
