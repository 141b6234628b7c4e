// Model preparation and sessions on a real (tiny) model: input specs, the default output path,
// synthetic calibration data, and a session computing what the graph says.
#include "runtime/prepared_model.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "onnx/graph_builder.h"
#include "runtime/session.h"

namespace ptqkit {
namespace {
namespace fs = std::filesystem;

fs::path SaveReluModel(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("ptqkit_runtime_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  GraphBuilder b;
  b.Input("x", {-1, 4}).Node("Relu", {"x"}, {"y"}, "relu").Output("y");
  const fs::path path = dir / "relu.onnx";
  std::ofstream(path, std::ios::binary) << b.Build().SerializeAsString();
  return path;
}

TEST(PreparedModel, DefaultOutputGoesBesideTheInput) {
  QuantizeOptions o;
  o.onnx_path = "/models/resnet.onnx";
  EXPECT_EQ(QuantizeOutputPath(o), "/models/resnet.quant.onnx");
  o.output_path = "/elsewhere/out.onnx";
  EXPECT_EQ(QuantizeOutputPath(o), "/elsewhere/out.onnx");
}

TEST(PreparedModel, InputsAndSyntheticDataFollowTheModel) {
  const PreparedModel model = LoadPreparedModel(SaveReluModel("synthetic").string());
  ASSERT_EQ(model.inputs.size(), 1u);
  EXPECT_EQ(model.inputs[0].name, "x");
  QuantizeOptions o;
  o.num_synthetic_samples = 6;
  o.calibration_batch_size = 2;
  const CalibrationData data = OpenCalibrationData(model, CalibrationRequest(o));
  EXPECT_TRUE(data.synthetic);
  EXPECT_EQ(data.set.total_samples(), 6);
  EXPECT_EQ(data.batch_size, 2);
  EXPECT_EQ(data.num_batches, 3);
}

TEST(InferenceSession, ComputesTheGraph) {
  const PreparedModel model = LoadPreparedModel(SaveReluModel("session").string());
  InferenceSession session(model.proto.SerializeAsString(), Runtime(QuantizeOptions{}));
  HostTensor x(DataType::kFloat, {1, 4});
  const float values[4] = {-1.5f, 0.0f, 2.0f, -0.25f};
  std::memcpy(x.bytes.data(), values, sizeof(values));
  const std::vector<HostTensor> out = session.Run(Batch{{"x", x}}, {"y"});
  ASSERT_EQ(out.size(), 1u);
  float y[4];
  std::memcpy(y, out[0].bytes.data(), sizeof(y));
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[1], 0.0f);
  EXPECT_EQ(y[2], 2.0f);
  EXPECT_EQ(y[3], 0.0f);
}

}  // namespace
}  // namespace ptqkit
