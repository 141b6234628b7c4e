#include "onnx/model_io.h"

#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>

#include "base/atomic_file.h"
#include "ptqkit/error.h"

namespace ptqkit::onnxio {
namespace fs = std::filesystem;
namespace {

constexpr uint64_t kProtobufLimit = 2147483647ull;  // protobuf's hard limit for one message

std::string ReadRange(const fs::path& file, uint64_t offset, int64_t length, const std::string& tensor) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    throw Error(fmt::format("external data file '{}' of tensor '{}' cannot be opened", file.string(), tensor),
                Error::Kind::kIo);
  }
  in.seekg(0, std::ios::end);
  const uint64_t size = static_cast<uint64_t>(in.tellg());
  if (length < 0) length = static_cast<int64_t>(size - std::min(size, offset));
  if (offset + static_cast<uint64_t>(length) > size) {
    throw Error(fmt::format("external data file '{}' is too short for tensor '{}' (needs {} bytes at offset {}, has {})",
                            file.string(), tensor, length, offset, size));
  }
  std::string bytes(static_cast<size_t>(length), '\0');
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(bytes.data(), length);
  return bytes;
}

void LoadExternal(onnx::TensorProto* tensor, const fs::path& model_dir) {
  if (tensor->data_location() != onnx::TensorProto::EXTERNAL) return;
  std::string location;
  uint64_t offset = 0;
  int64_t length = -1;
  for (const auto& entry : tensor->external_data()) {
    if (entry.key() == "location") location = entry.value();
    if (entry.key() == "offset") offset = std::stoull(entry.value());
    if (entry.key() == "length") length = std::stoll(entry.value());
  }
  if (location.empty()) throw Error(fmt::format("tensor '{}' has external data without a location", tensor->name()));
  const fs::path rel(location);
  if (rel.is_absolute() || location.find("..") != std::string::npos) {
    throw Error(fmt::format("tensor '{}': external data location '{}' must be a relative path inside the model folder",
                            tensor->name(), location));
  }
  tensor->set_raw_data(ReadRange(model_dir / rel, offset, length, tensor->name()));
  tensor->clear_external_data();
  tensor->clear_data_location();  // absent, as in a model saved without external data
}

void LoadExternalInGraph(onnx::GraphProto* graph, const fs::path& dir) {
  for (auto& t : *graph->mutable_initializer()) LoadExternal(&t, dir);
  for (auto& node : *graph->mutable_node()) {
    for (auto& attr : *node.mutable_attribute()) {
      if (attr.has_t()) LoadExternal(attr.mutable_t(), dir);
      if (attr.has_g()) LoadExternalInGraph(attr.mutable_g(), dir);
      for (auto& g : *attr.mutable_graphs()) LoadExternalInGraph(&g, dir);
    }
  }
}

}  // namespace

onnx::ModelProto LoadModel(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw Error(fmt::format("model file '{}' does not exist", path), Error::Kind::kIo);
  if (fs::is_directory(path, ec)) throw Error(fmt::format("model path '{}' is a directory, not an ONNX file", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("model file '{}' cannot be opened for reading", path), Error::Kind::kIo);
  google::protobuf::io::IstreamInputStream raw(&in);
  google::protobuf::io::CodedInputStream coded(&raw);
  coded.SetTotalBytesLimit(INT_MAX);
  onnx::ModelProto model;
  if (!model.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage()) {
    throw Error(fmt::format("model file '{}' is not a valid ONNX model (protobuf parse failed: corrupt or truncated)", path));
  }
  if (!model.has_graph() || model.graph().node_size() == 0) {
    throw Error(fmt::format("model file '{}' is not a valid ONNX model (it has no graph nodes)", path));
  }
  LoadExternalInGraph(model.mutable_graph(), fs::absolute(path).parent_path());
  return model;
}

namespace {

// Moves large initializers to `data_name` (in the same folder as the model), returning the bytes
// to write there. Offsets are aligned to 4 KiB pages, as ONNX tools commonly do, so the file
// can be memory-mapped.
std::string ExternalizeInitializers(onnx::ModelProto* model, const std::string& data_name, size_t threshold) {
  std::string blob;
  for (auto& t : *model->mutable_graph()->mutable_initializer()) {
    if (!t.has_raw_data() || t.raw_data().size() <= threshold) continue;
    const size_t aligned = (blob.size() + 4095) / 4096 * 4096;
    blob.resize(aligned, '\0');
    const size_t offset = blob.size();
    const size_t length = t.raw_data().size();
    blob += t.raw_data();
    t.clear_raw_data();
    t.set_data_location(onnx::TensorProto::EXTERNAL);
    auto add = [&](const char* key, const std::string& value) {
      auto* entry = t.add_external_data();
      entry->set_key(key);
      entry->set_value(value);
    };
    add("location", data_name);
    add("offset", std::to_string(offset));
    add("length", std::to_string(length));
  }
  return blob;
}

}  // namespace

void SaveModel(const onnx::ModelProto& model, const std::string& path, const SaveOptions& options) {
  const fs::path out(path);
  bool external = options.external_data || model.ByteSizeLong() >= kProtobufLimit;
  std::string model_bytes;
  std::string data_bytes;
  const std::string data_name = out.filename().string() + ".data";
  if (external) {
    onnx::ModelProto copy = model;
    data_bytes = ExternalizeInitializers(&copy, data_name, options.external_threshold_bytes);
    if (copy.ByteSizeLong() >= kProtobufLimit) {
      throw Error(fmt::format("cannot write '{}': the graph is larger than 2 GiB even with weights as external data", path));
    }
    // Deterministic serialization keeps output files byte-identical across runs.
    copy.SerializeToString(&model_bytes);
  } else {
    model.SerializeToString(&model_bytes);
  }
  // Write the data file first: a model file that exists always has its data beside it.
  AtomicFileWriter data_writer;
  if (external) data_writer.Stage((out.parent_path() / data_name).string(), data_bytes);
  AtomicFileWriter model_writer;
  model_writer.Stage(path, model_bytes);
  data_writer.Commit();
  model_writer.Commit();
}

std::string SerializeWithOutputs(const onnx::ModelProto& model, const std::vector<std::string>& outputs) {
  onnx::ModelProto copy = model;
  copy.mutable_graph()->clear_output();
  for (const auto& name : outputs) copy.mutable_graph()->add_output()->set_name(name);
  std::string bytes;
  copy.SerializeToString(&bytes);
  return bytes;
}

}  // namespace ptqkit::onnxio
