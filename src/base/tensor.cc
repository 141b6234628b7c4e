#include "ptqkit/tensor.h"

#include <fmt/format.h>

#include <cstring>

#include "ptqkit/error.h"

namespace ptqkit {

size_t ElementSize(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat: case DataType::kInt32: case DataType::kUint32: return 4;
    case DataType::kUint8: case DataType::kInt8: case DataType::kBool: case DataType::kFloat8E4M3FN: return 1;
    case DataType::kUint16: case DataType::kInt16: case DataType::kFloat16: case DataType::kBFloat16: return 2;
    case DataType::kInt64: case DataType::kDouble: case DataType::kUint64: return 8;
    default: return 0;
  }
}

std::string DataTypeName(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat: return "float32";
    case DataType::kUint8: return "uint8";
    case DataType::kInt8: return "int8";
    case DataType::kUint16: return "uint16";
    case DataType::kInt16: return "int16";
    case DataType::kInt32: return "int32";
    case DataType::kInt64: return "int64";
    case DataType::kString: return "string";
    case DataType::kBool: return "bool";
    case DataType::kFloat16: return "float16";
    case DataType::kDouble: return "float64";
    case DataType::kUint32: return "uint32";
    case DataType::kUint64: return "uint64";
    case DataType::kBFloat16: return "bfloat16";
    case DataType::kFloat8E4M3FN: return "float8e4m3fn";
    case DataType::kUint4: return "uint4";
    case DataType::kInt4: return "int4";
    default: return fmt::format("dtype#{}", static_cast<int>(dtype));
  }
}

std::string ShapeToString(const std::vector<int64_t>& shape) {
  if (shape.empty()) return "scalar";
  std::string out;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += 'x';
    out += shape[i] < 0 ? std::string("?") : std::to_string(shape[i]);
  }
  return out;
}

HostTensor::HostTensor(DataType dtype_in, std::vector<int64_t> shape_in)
    : dtype(dtype_in), shape(std::move(shape_in)) {
  bytes.resize(static_cast<size_t>(NumElements()) * ElementSize(dtype));
}

int64_t HostTensor::NumElements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

HostTensor SliceAxis0(const HostTensor& tensor, int64_t begin, int64_t end) {
  if (tensor.shape.empty() || begin < 0 || end < begin || end > tensor.shape[0]) {
    throw Error(fmt::format("internal: bad slice [{}, {}) of tensor with shape {}", begin, end,
                            ShapeToString(tensor.shape)));
  }
  std::vector<int64_t> shape = tensor.shape;
  shape[0] = end - begin;
  HostTensor out(tensor.dtype, shape);
  const size_t row = tensor.shape[0] ? tensor.bytes.size() / static_cast<size_t>(tensor.shape[0]) : 0;
  if (!out.bytes.empty()) std::memcpy(out.bytes.data(), tensor.bytes.data() + row * begin, out.bytes.size());
  return out;
}

}  // namespace ptqkit
