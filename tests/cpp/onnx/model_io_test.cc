// Loading and saving: external data both ways, atomic writes, clear errors.
#include "onnx/model_io.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "onnx/graph_builder.h"
#include "ptqkit/error.h"

namespace ptqkit {
namespace {
namespace fs = std::filesystem;

fs::path TempDir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("ptqkit_model_io_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

onnx::ModelProto Model() {
  GraphBuilder b;
  b.Input("x", {1, 64}).Weight("w", {64, 64}).Node("MatMul", {"x", "w"}, {"out"}, "mm").Output("out");
  auto m = b.Build();
  // Raw data, as exporters write it (external data only applies to raw_data).
  auto* w = m.mutable_graph()->mutable_initializer(0);
  std::string raw(reinterpret_cast<const char*>(w->float_data().data()), w->float_data_size() * sizeof(float));
  w->clear_float_data();
  w->set_raw_data(raw);
  auto* meta = m.add_metadata_props();
  meta->set_key("author");
  meta->set_value("test");
  return m;
}

TEST(ModelIo, ExternalDataRoundTripAndOriginalUntouched) {
  const fs::path dir = TempDir("external");
  const auto model = Model();
  onnxio::SaveOptions external;
  external.external_data = true;
  onnxio::SaveModel(model, (dir / "m.onnx").string(), external);
  ASSERT_TRUE(fs::exists(dir / "m.onnx.data"));
  EXPECT_EQ(fs::file_size(dir / "m.onnx.data"), 64u * 64u * 4u);
  const auto loaded = onnxio::LoadModel((dir / "m.onnx").string());
  EXPECT_EQ(loaded.graph().initializer(0).raw_data(), model.graph().initializer(0).raw_data());
  EXPECT_EQ(loaded.metadata_props(0).value(), "test");
  // Saving again without external data gives one self-contained file equal to the original.
  onnxio::SaveModel(loaded, (dir / "inline.onnx").string());
  EXPECT_EQ(onnxio::LoadModel((dir / "inline.onnx").string()).SerializeAsString(), model.SerializeAsString());
  // No temporary files left.
  for (const auto& e : fs::directory_iterator(dir)) EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos);
}

TEST(ModelIo, MissingCorruptAndTruncatedFilesAreNamedErrors) {
  const fs::path dir = TempDir("bad");
  EXPECT_THROW(onnxio::LoadModel((dir / "missing.onnx").string()), Error);
  std::ofstream((dir / "junk.onnx").string()) << "this is not a protobuf \xff\xff\xff";
  try {
    onnxio::LoadModel((dir / "junk.onnx").string());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("junk.onnx"), std::string::npos);
  }
  const std::string bytes = Model().SerializeAsString();
  std::ofstream((dir / "cut.onnx").string(), std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  EXPECT_THROW(onnxio::LoadModel((dir / "cut.onnx").string()), Error);
}

TEST(ModelIo, MissingExternalDataFileIsAnError) {
  const fs::path dir = TempDir("nodata");
  onnxio::SaveOptions external;
  external.external_data = true;
  onnxio::SaveModel(Model(), (dir / "m.onnx").string(), external);
  fs::remove(dir / "m.onnx.data");
  EXPECT_THROW(onnxio::LoadModel((dir / "m.onnx").string()), Error);
}

TEST(ModelIo, UnwritableDestinationLeavesNothing) {
  const fs::path dir = TempDir("unwritable");
  EXPECT_THROW(onnxio::SaveModel(Model(), (dir / "no_such_folder" / "m.onnx").string()), Error);
  EXPECT_FALSE(fs::exists(dir / "no_such_folder"));
  EXPECT_TRUE(fs::is_empty(dir));
}

}  // namespace
}  // namespace ptqkit
