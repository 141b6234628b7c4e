// UpgradeOpset to 21 (int4 needs it): the ops whose meaning changed in opsets 20 and 21 are
// converted (GridSample's renamed modes) or refused with an error naming the node.
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
  EXPECT_EQ(r.graph().node(0).input_size(), 2);  // axes became an input (opset 18)
}

TEST(Opset21Upgrade, RefusesGroupNormalizationAndDft) {
  GraphBuilder b;
  b.Input("x", {1, 4, 8, 8}).Weight("s", {2}).Weight("bias", {2});
  b.Node("GroupNormalization", {"x", "s", "bias"}, {"y"}, "gn", {{"num_groups", {2}}}).Output("y");
  onnx::ModelProto gn = b.Build(18);
  try {
    onnxio::UpgradeOpset(&gn, 21);
    FAIL() << "GroupNormalization upgraded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'gn' (GroupNormalization)"), std::string::npos) << e.what();
  }
  onnx::ModelProto gn19 = b.Build(18);
  EXPECT_NO_THROW(onnxio::UpgradeOpset(&gn19, 19));  // unchanged up to 20
  onnx::ModelProto dft = OneOp("DFT", {"x"}, 17);
  EXPECT_THROW(onnxio::UpgradeOpset(&dft, 21), Error);
}

}  // namespace
}  // namespace ptqkit
