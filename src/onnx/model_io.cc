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
#include "onnx/session_model.h"
#include "onnx/weight_stash.h"
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

constexpr uint64_t kDataAlignment = 4096;  // page-aligned offsets, as ONNX tools write, so the file can be mapped

}  // namespace

void SaveModel(const onnx::ModelProto& model, const std::string& path, const SaveOptions& options) {
  const fs::path out(path);
  const bool external = options.external_data || model.ByteSizeLong() >= kProtobufLimit;
  AtomicFileWriter model_writer;
  if (!external) {
    // Straight from the message into the file: the serialized bytes are never held in memory.
    model_writer.Open(path);
    if (!model.SerializeToFileDescriptor(model_writer.fd())) {
      throw Error(fmt::format("cannot write '{}': serializing the model failed", path), Error::Kind::kIo);
    }
    model_writer.Finish();
    model_writer.Commit();
    return;
  }
  // The large weights go to "<output file name>.data" one tensor at a time, and the model that
  // points at them is built without copying them. The data file is committed first: a model file
  // that exists always has its data beside it.
  const std::string data_name = out.filename().string() + ".data";
  AtomicFileWriter data_writer;
  data_writer.Open((out.parent_path() / data_name).string());
  onnx::ModelProto light =
      CopyWithoutLargeWeights(model, options.external_threshold_bytes, [&](const onnx::TensorProto& t) {
        const uint64_t offset = (data_writer.size() + kDataAlignment - 1) / kDataAlignment * kDataAlignment;
        data_writer.Append(std::string(offset - data_writer.size(), '\0'));
        data_writer.Append(t.raw_data());
        onnx::TensorProto ref;
        ref.set_name(t.name());
        ref.set_data_type(t.data_type());
        *ref.mutable_dims() = t.dims();
        if (t.has_doc_string()) ref.set_doc_string(t.doc_string());
        MarkExternal(&ref, data_name, offset, t.raw_data().size());
        return ref;
      });
  data_writer.Finish();
  if (light.ByteSizeLong() >= kProtobufLimit) {
    throw Error(fmt::format("cannot write '{}': the graph is larger than 2 GiB even with weights as external data", path));
  }
  std::string model_bytes;
  // Deterministic serialization keeps output files byte-identical across runs.
  light.SerializeToString(&model_bytes);
  model_writer.Stage(path, model_bytes);
  data_writer.Commit();
  model_writer.Commit();
}

}  // namespace ptqkit::onnxio
