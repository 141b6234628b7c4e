#include "arrays.h"

#include <fmt/format.h>

#include <cstring>

#include "ptqkit/error.h"

namespace py = pybind11;

namespace ptqkit::python {
namespace {

// numpy's (kind, itemsize) -> ONNX type. Types the models cannot take (float64, int16, ...) are
// still mapped, so the data check against the model names both types in its message.
DataType DataTypeOf(const py::handle& dtype) {
  const char kind = dtype.attr("kind").cast<std::string>().at(0);
  const auto size = dtype.attr("itemsize").cast<int64_t>();
  switch (kind) {
    case 'f':
      if (size == 4) return DataType::kFloat;
      if (size == 2) return DataType::kFloat16;
      if (size == 8) return DataType::kDouble;
      break;
    case 'i':
      if (size == 8) return DataType::kInt64;
      if (size == 4) return DataType::kInt32;
      if (size == 2) return DataType::kInt16;
      if (size == 1) return DataType::kInt8;
      break;
    case 'u':
      if (size == 1) return DataType::kUint8;
      if (size == 2) return DataType::kUint16;
      if (size == 4) return DataType::kUint32;
      if (size == 8) return DataType::kUint64;
      break;
    case 'b':
      return DataType::kBool;
    default:
      break;
  }
  return DataType::kUndefined;
}

}  // namespace

HostTensor ToHostTensor(const std::string& name, const py::object& array) {
  const py::object dtype = array.attr("dtype");
  const DataType data_type = DataTypeOf(dtype);
  const std::string label = name.empty() ? "calibration_data" : fmt::format("calibration_data['{}']", name);
  if (data_type == DataType::kUndefined) {
    throw Error(fmt::format("{}: unsupported dtype '{}' (expected float32, float16, int64, int32, uint8, int8 or bool)",
                            label, py::str(dtype).cast<std::string>()));
  }
  // C order and native byte order, without changing the element type or the rank (a 0-d array
  // stays a scalar: np.ascontiguousarray would make it 1-d).
  const py::module_ np = py::module_::import("numpy");
  const py::object contiguous =
      np.attr("asarray")(array, dtype.attr("newbyteorder")("="), py::arg("order") = "C");
  const py::buffer_info info = py::reinterpret_borrow<py::buffer>(contiguous).request();

  HostTensor tensor;
  tensor.dtype = data_type;
  tensor.shape.assign(info.shape.begin(), info.shape.end());
  tensor.bytes.resize(static_cast<size_t>(info.size * info.itemsize));
  if (!tensor.bytes.empty()) std::memcpy(tensor.bytes.data(), info.ptr, tensor.bytes.size());
  return tensor;
}

std::map<std::string, HostTensor> ToHostTensors(const py::dict& arrays) {
  std::map<std::string, HostTensor> tensors;
  for (const auto& [key, value] : arrays) {
    const auto name = key.cast<std::string>();
    tensors.emplace(name, ToHostTensor(name, py::reinterpret_borrow<py::object>(value)));
  }
  return tensors;
}

}  // namespace ptqkit::python
