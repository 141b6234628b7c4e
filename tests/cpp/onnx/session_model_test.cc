// MakeSessionModelOver: a light model (large weights as placeholders, as the scan's probe
// sub-models hold them) runs with views of another graph's weights and computes what the full
// model computes; a placeholder without a matching weight is an error.
#include "onnx/session_model.h"

#include <gtest/gtest.h>

#include <cstring>

#include "onnx/graph_builder.h"
#include "ptqkit/error.h"
#include "runtime/session.h"

namespace ptqkit {
namespace {

// x[N,256] -> MatMul[256,128] (128 KiB, above kDefaultViewBytes) -> Relu -> MatMul[128,8] (4 KiB) -> y
onnx::ModelProto Model() {
  GraphBuilder b;
  b.Input("x", {-1, 256}).Weight("big", {256, 128}).Weight("small", {128, 8});
  b.Node("MatMul", {"x", "big"}, {"h"}).Node("Relu", {"h"}, {"r"}).Node("MatMul", {"r", "small"}, {"y"});
  b.Output("y");
  onnx::ModelProto m = b.Build();
  for (auto& t : *m.mutable_graph()->mutable_initializer()) {  // raw data, as exporters store weights
    std::string raw(t.float_data_size() * sizeof(float), '\0');
    std::memcpy(raw.data(), t.float_data().data(), raw.size());
    t.clear_float_data();
    t.set_raw_data(raw);
  }
  return m;
}

HostTensor Input() {
  HostTensor x(DataType::kFloat, {3, 256});
  for (int64_t i = 0; i < x.NumElements(); ++i) x.Data<float>()[i] = static_cast<float>((i * 37) % 11) - 5.0f;
  return x;
}

TEST(SessionModelOver, RunsALightCopyOnTheOriginalsWeights) {
  const onnx::ModelProto full = Model();
  const onnx::ModelProto light = onnxio::CopyWithoutLargeWeights(full, onnxio::kDefaultViewBytes, onnxio::WeightPlaceholder);
  int placeholders = 0;
  for (const auto& t : light.graph().initializer()) placeholders += t.raw_data().empty();
  ASSERT_EQ(placeholders, 1);  // "big" only

  const onnxio::SessionModel over = onnxio::MakeSessionModelOver(light, full.graph());
  ASSERT_EQ(over.weights.size(), 1u);
  EXPECT_EQ(over.weights[0].data, full.graph().initializer(0).raw_data().data());  // a view, not a copy
  const HostTensor want = InferenceSession(onnxio::MakeSessionModel(full), {}).Run({{"x", Input()}}, {"y"}).at(0);
  const HostTensor got = InferenceSession(over, {}).Run({{"x", Input()}}, {"y"}).at(0);
  ASSERT_EQ(got.bytes.size(), want.bytes.size());
  EXPECT_EQ(std::memcmp(got.bytes.data(), want.bytes.data(), got.bytes.size()), 0);

  onnx::GraphProto without_big = full.graph();
  without_big.mutable_initializer()->DeleteSubrange(0, 1);
  EXPECT_THROW(onnxio::MakeSessionModelOver(light, without_big), Error);
}

}  // namespace
}  // namespace ptqkit
