// UpgradeOpset to 21 (int4 needs it): the ops whose meaning changed in opsets 18 to 21 are
// converted by the ONNX library's version converter (GridSample's renamed modes, ReduceMean axes,
// GroupNormalization's per-group scale and bias).
#include <gtest/gtest.h>

#include "onnx/graph_builder.h"
#include "onnx/model_prep.h"
#include "onnx/onnx_library.h"
#include "ptqkit/error.h"

namespace ptqkit {
namespace {

onnx::ModelProto OneOp(const std::string& op, const std::vector<std::string>& inputs, int64_t opset) {
  GraphBuilder b;
  b.Input("x", {1, 4, 8, 8}).Input("g", {1, 8, 8, 2});
  b.Node(op, inputs, {"y"}, "node").Output("y");
  return b.Build(opset);
}

TEST(Opset21Upgrade, RenamesGridSampleModesAndKeepsOtherOps) {
  onnx::ModelProto m = OneOp("GridSample", {"x", "g"}, 17);
  auto* a = m.mutable_graph()->mutable_node(0)->add_attribute();
  a->set_name("mode");
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s("bicubic");
  EXPECT_EQ(onnxio::UpgradeOpset(&m, 21), 17);
  EXPECT_EQ(onnxio::DefaultOpset(m), 21);
  EXPECT_EQ(m.graph().node(0).attribute(0).s(), "cubic");

  onnx::ModelProto r = OneOp("ReduceMean", {"x"}, 17);
  auto* axes = r.mutable_graph()->mutable_node(0)->add_attribute();
  axes->set_name("axes");
  axes->set_type(onnx::AttributeProto::INTS);
  axes->add_ints(1);
  onnxio::UpgradeOpset(&r, 21);
  const onnx::NodeProto& mean = r.graph().node(r.graph().node_size() - 1);  // after the axes Constant
  EXPECT_EQ(mean.op_type(), "ReduceMean");
  EXPECT_EQ(mean.input_size(), 2);  // axes became an input (opset 18)
}

TEST(Opset21Upgrade, GroupNormalizationAndDftAreConverted) {
  // Both changed meaning between 18 and 21; the version converter has adapters for them (the
  // hand-written upgrade this replaced refused them).
  GraphBuilder b;
  b.Input("x", {1, 4, 8, 8}).Weight("s", {2}).Weight("bias", {2});
  b.Node("GroupNormalization", {"x", "s", "bias"}, {"y"}, "gn", {{"num_groups", {2}}}).Output("y");
  onnx::ModelProto gn = b.Build(18);
  EXPECT_EQ(onnxio::UpgradeOpset(&gn, 21), 18);
  EXPECT_EQ(onnxio::DefaultOpset(gn), 21);
  EXPECT_GE(gn.ir_version(), 10);
  onnx::ModelProto dft = OneOp("DFT", {"x"}, 17);
  EXPECT_EQ(onnxio::UpgradeOpset(&dft, 21), 17);
  EXPECT_EQ(onnxio::DefaultOpset(dft), 21);
}

}  // namespace
}  // namespace ptqkit
