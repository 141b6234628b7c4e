#include "onnx/tensor_size.h"

#include <fmt/format.h>

#include <limits>

#include "ptqkit/error.h"
#include "ptqkit/tensor.h"

namespace ptqkit::onnxio {
namespace {

std::string DimsText(const onnx::TensorProto& t) { return ShapeToString({t.dims().begin(), t.dims().end()}); }

std::string TypeName(const onnx::TensorProto& t) {
  return DataTypeName(static_cast<DataType>(t.data_type()));
}

void CheckTensor(const onnx::TensorProto& t, const std::string& path) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL) return;  // checked where its file is read (model_io.cc)
  const std::string where = fmt::format("model '{}'", path);
  const std::optional<uint64_t> bytes = ExpectedRawBytes(t, where);
  if (!bytes) return;
  const uint64_t elements_or_bytes = *bytes;
  auto refuse = [&](uint64_t has, const char* unit) {
    throw Error(fmt::format("{}: tensor '{}' declares dims {} of {} ({} bytes) but holds {} {}", where, t.name(),
                            DimsText(t), TypeName(t), elements_or_bytes, has, unit));
  };
  if (t.has_raw_data()) {
    if (t.raw_data().size() != *bytes) refuse(t.raw_data().size(), "bytes");
    return;
  }
  // Typed values: only the fields with one value per element are compared (float, int64, double).
  const auto count = [&](int n, size_t size) {
    if (n > 0 && static_cast<uint64_t>(n) * size != *bytes) refuse(static_cast<uint64_t>(n) * size, "bytes of values");
  };
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT: count(t.float_data_size(), 4); break;
    case onnx::TensorProto::INT64: count(t.int64_data_size(), 8); break;
    case onnx::TensorProto::DOUBLE: count(t.double_data_size(), 8); break;
    default: break;
  }
}

}  // namespace

std::optional<uint64_t> ExpectedRawBytes(const onnx::TensorProto& tensor, const std::string& where) {
  const auto dtype = static_cast<DataType>(tensor.data_type());
  const bool four_bit = dtype == DataType::kInt4 || dtype == DataType::kUint4 ||
                        tensor.data_type() == onnx::TensorProto::FLOAT4E2M1;
  const size_t size = ElementSize(dtype);
  if (size == 0 && !four_bit) return std::nullopt;
  uint64_t elements = 1;
  constexpr uint64_t kLimit = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  for (int64_t d : tensor.dims()) {
    if (d < 0) throw Error(fmt::format("{}: tensor '{}' has a negative dim: {}", where, tensor.name(), DimsText(tensor)));
    if (d != 0 && elements > kLimit / static_cast<uint64_t>(d)) {
      throw Error(fmt::format("{}: tensor '{}' declares dims {}: more elements than any file can hold", where,
                              tensor.name(), DimsText(tensor)));
    }
    elements *= static_cast<uint64_t>(d);
  }
  if (four_bit) return (elements + 1) / 2;
  if (elements > kLimit / size) {
    throw Error(fmt::format("{}: tensor '{}' declares dims {} of {}: more bytes than any file can hold", where,
                            tensor.name(), DimsText(tensor), TypeName(tensor)));
  }
  return elements * size;
}

void CheckTensorSizes(const onnx::GraphProto& graph, const std::string& path) {
  for (const auto& t : graph.initializer()) CheckTensor(t, path);
  for (const auto& node : graph.node()) {
    for (const auto& attr : node.attribute()) {
      if (attr.has_t()) CheckTensor(attr.t(), path);
      if (attr.has_g()) CheckTensorSizes(attr.g(), path);
      for (const auto& g : attr.graphs()) CheckTensorSizes(g, path);
    }
  }
}

}  // namespace ptqkit::onnxio
