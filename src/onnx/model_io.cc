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
#include <optional>

#include "base/atomic_file.h"
#include "base/input_file.h"
#include "onnx/session_model.h"
#include "onnx/tensor_size.h"
#include "onnx/weight_stash.h"
#include "ptqkit/error.h"
#include "ptqkit/tensor.h"

namespace ptqkit::onnxio {
namespace fs = std::filesystem;
namespace {

constexpr uint64_t kProtobufLimit = 2147483647ull;  // protobuf's hard limit for one message

// Parses an external-data offset or length: decimal digits only, no sign, no overflow. std::stoull
// would accept "-1" (wrapping to 2^64-1) and throw its own message for "abc".
uint64_t ParseExternalNumber(const std::string& text, const std::string& key, const std::string& tensor) {
  uint64_t value = 0;
  bool ok = !text.empty() && text.size() <= 19;
  for (char c : text) ok = ok && c >= '0' && c <= '9';
  if (ok) value = std::stoull(text);
  if (!ok || value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    throw Error(fmt::format("tensor '{}': external data {} '{}' is not a byte count (expected 0 to {})", tensor, key,
                            text, std::numeric_limits<int64_t>::max()));
  }
  return value;
}

// The external data file, resolved (symlinks included) and confined to the model's folder: a
// location is a relative path whose components are never "..", and whatever links it crosses it
// must end inside the folder. Only real ".." components count: "w..bin" is a plain file name.
fs::path ResolveExternal(const std::string& location, const fs::path& model_dir, const std::string& tensor) {
  const fs::path rel(location);
  bool traversal = false;
  for (const auto& part : rel) traversal = traversal || part == "..";
  if (rel.is_absolute() || rel.has_root_name() || traversal || location.find('\0') != std::string::npos) {
    throw Error(fmt::format("tensor '{}': external data location '{}' must be a relative path inside the model folder",
                            tensor, location));
  }
  std::error_code ec;
  const fs::path dir = fs::canonical(model_dir, ec);
  const fs::path file = fs::canonical(model_dir / rel, ec);
  if (ec) {
    throw Error(fmt::format("tensor '{}': external data file '{}' does not exist", tensor, (model_dir / rel).string()),
                Error::Kind::kIo);
  }
  const std::string prefix = dir.string() == "/" ? "/" : dir.string() + "/";
  if (file.string().compare(0, prefix.size(), prefix) != 0) {
    throw Error(fmt::format("tensor '{}': external data '{}' resolves to '{}', outside the model folder '{}' (a "
                            "symlink?); ptqkit reads external data only from inside the model's folder",
                            tensor, location, file.string(), dir.string()));
  }
  return file;
}

std::string ReadRange(const fs::path& file, uint64_t offset, std::optional<uint64_t> length, const std::string& tensor) {
  const InputFile in = OpenInputFile(file.string(), fmt::format("external data file of tensor '{}'", tensor));
  const auto size = static_cast<uint64_t>(in.size());
  // Compared without adding, so no value of offset or length can wrap the check.
  if (offset > size || (length && *length > size - offset)) {
    throw Error(fmt::format("external data file '{}' is too short for tensor '{}' (needs {} bytes at offset {}, has {})",
                            file.string(), tensor, length ? fmt::format("{}", *length) : std::string("the"), offset,
                            size));
  }
  const uint64_t count = length ? *length : size - offset;
  std::string bytes(static_cast<size_t>(count), '\0');
  uint64_t done = 0;
  while (done < count) {
    const ssize_t n = ::pread(in.fd(), bytes.data() + done, count - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      throw Error(fmt::format("external data file '{}' of tensor '{}' cannot be read at offset {}", file.string(),
                              tensor, offset + done),
                  Error::Kind::kIo);
    }
    done += static_cast<uint64_t>(n);
  }
  return bytes;
}

void LoadExternal(onnx::TensorProto* tensor, const fs::path& model_dir, std::vector<std::string>* files) {
  if (tensor->data_location() != onnx::TensorProto::EXTERNAL) return;
  std::string location;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
  for (const auto& entry : tensor->external_data()) {
    if (entry.key() == "location") location = entry.value();
    if (entry.key() == "offset") offset = ParseExternalNumber(entry.value(), "offset", tensor->name());
    if (entry.key() == "length") length = ParseExternalNumber(entry.value(), "length", tensor->name());
  }
  if (location.empty()) throw Error(fmt::format("tensor '{}' has external data without a location", tensor->name()));
  const fs::path file = ResolveExternal(location, model_dir, tensor->name());
  tensor->set_raw_data(ReadRange(file, offset, length, tensor->name()));
  // The bytes read must be the tensor's: ONNX Runtime's own message for a mismatch names neither
  // the file nor the offset.
  const auto need = ExpectedRawBytes(*tensor, fmt::format("external data file '{}'", file.string()));
  if (need && *need != tensor->raw_data().size()) {
    throw Error(fmt::format("external data file '{}' holds {} bytes for tensor '{}' (from offset {}{}); its dims {} "
                            "of {} need {}",
                            file.string(), tensor->raw_data().size(), tensor->name(), offset,
                            length ? fmt::format(", length {}", *length) : std::string(" to the end of the file"),
                            ShapeToString({tensor->dims().begin(), tensor->dims().end()}),
                            DataTypeName(static_cast<DataType>(tensor->data_type())), *need));
  }
  if (files) files->push_back(file.string());
  tensor->clear_external_data();
  tensor->clear_data_location();  // absent, as in a model saved without external data
}

void LoadExternalInGraph(onnx::GraphProto* graph, const fs::path& dir, std::vector<std::string>* files) {
  for (auto& t : *graph->mutable_initializer()) LoadExternal(&t, dir, files);
  for (auto& node : *graph->mutable_node()) {
    for (auto& attr : *node.mutable_attribute()) {
      if (attr.has_t()) LoadExternal(attr.mutable_t(), dir, files);
      if (attr.has_g()) LoadExternalInGraph(attr.mutable_g(), dir, files);
      for (auto& g : *attr.mutable_graphs()) LoadExternalInGraph(&g, dir, files);
    }
  }
}

}  // namespace

onnx::ModelProto LoadModel(const std::string& path, std::vector<std::string>* external_files) {
  const InputFile in = OpenInputFile(path, "model file");
  google::protobuf::io::FileInputStream raw(in.fd());
  google::protobuf::io::CodedInputStream coded(&raw);
  coded.SetTotalBytesLimit(INT_MAX);
  onnx::ModelProto model;
  if (!model.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage()) {
    throw Error(fmt::format("model file '{}' is not a valid ONNX model (protobuf parse failed: corrupt or truncated)", path));
  }
  if (!model.has_graph() || model.graph().node_size() == 0) {
    throw Error(fmt::format("model file '{}' is not a valid ONNX model (it has no graph nodes)", path));
  }
  std::vector<std::string> files;
  LoadExternalInGraph(model.mutable_graph(), fs::absolute(path).parent_path(), &files);
  if (external_files) *external_files = std::move(files);
  return model;
}

namespace {

constexpr uint64_t kDataAlignment = 4096;  // page-aligned offsets, as ONNX tools write, so the file can be mapped

}  // namespace

void SaveModel(const onnx::ModelProto& model, const std::string& path, const SaveOptions& options) {
  ModelFileWriter writer;
  writer.Stage(model, path, options);
  writer.Commit();
}

void ModelFileWriter::Stage(const onnx::ModelProto& model, const std::string& path, const SaveOptions& options) {
  const fs::path out(path);
  const bool external = options.external_data || model.ByteSizeLong() >= kProtobufLimit;
  if (!external) {
    // Straight from the message into the file: the serialized bytes are never held in memory.
    model_.Open(path);
    if (!model.SerializeToFileDescriptor(model_.fd())) {
      throw Error(fmt::format("cannot write '{}': serializing the model failed", path), Error::Kind::kIo);
    }
    model_.Finish();
    return;
  }
  // The large weights go to "<output file name>.data" one tensor at a time, and the model that
  // points at them is built without copying them.
  const std::string data_name = out.filename().string() + ".data";
  data_.Open((out.parent_path() / data_name).string());
  onnx::ModelProto light =
      CopyWithoutLargeWeights(model, options.external_threshold_bytes, [&](const onnx::TensorProto& t) {
        const uint64_t offset = (data_.size() + kDataAlignment - 1) / kDataAlignment * kDataAlignment;
        data_.Append(std::string(offset - data_.size(), '\0'));
        data_.Append(t.raw_data());
        onnx::TensorProto ref;
        ref.set_name(t.name());
        ref.set_data_type(t.data_type());
        *ref.mutable_dims() = t.dims();
        if (t.has_doc_string()) ref.set_doc_string(t.doc_string());
        MarkExternal(&ref, data_name, offset, t.raw_data().size());
        return ref;
      });
  data_.Finish();
  if (light.ByteSizeLong() >= kProtobufLimit) {
    throw Error(fmt::format("cannot write '{}': the graph is larger than 2 GiB even with weights as external data", path));
  }
  std::string model_bytes;
  // Deterministic serialization keeps output files byte-identical across runs.
  light.SerializeToString(&model_bytes);
  model_.Stage(path, model_bytes);
}

void ModelFileWriter::Commit() {
  data_.Commit();
  model_.Commit();
}

}  // namespace ptqkit::onnxio
