// HostTensor: a dense, row-major tensor in host memory, typed with ONNX's TensorProto data type
// codes. It is the currency between the data reader, ONNX Runtime and the calibrators.
// A HostTensor owns its bytes; copying copies them. Not thread-safe for concurrent mutation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ptqkit {

// Values are ONNX TensorProto.DataType codes, spelled as numbers because this public header does not
// include the ONNX protos; src/onnx/data_type_codes.cc checks each against the ONNX enum.
enum class DataType : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kUint8 = 2,
  kInt8 = 3,
  kUint16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kDouble = 11,
  kUint32 = 12,
  kUint64 = 13,
  kBFloat16 = 16,
  kFloat8E4M3FN = 17,
  kUint4 = 21,
  kInt4 = 22,
};

// Bytes per element; 0 for types that are not byte-addressable (string, 4-bit types).
size_t ElementSize(DataType dtype);
// "float32", "float16", "int64", ... (numpy spelling, as users see it in .npy files).
std::string DataTypeName(DataType dtype);
// Shape as "1x3x224x224"; "scalar" for rank 0.
std::string ShapeToString(const std::vector<int64_t>& shape);

struct HostTensor {
  DataType dtype = DataType::kUndefined;
  std::vector<int64_t> shape;
  std::vector<std::byte> bytes;

  HostTensor() = default;
  HostTensor(DataType dtype, std::vector<int64_t> shape);  // zero-filled

  int64_t NumElements() const;
  template <typename T>
  T* Data() { return reinterpret_cast<T*>(bytes.data()); }
  template <typename T>
  const T* Data() const { return reinterpret_cast<const T*>(bytes.data()); }
};

// Copies elements [begin, end) along axis 0 into a new tensor. REQUIRES: rank >= 1, 0 <= begin <= end <= shape[0].
HostTensor SliceAxis0(const HostTensor& tensor, int64_t begin, int64_t end);

}  // namespace ptqkit
