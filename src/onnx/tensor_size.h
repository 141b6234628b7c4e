// The bytes a tensor's dims and data type say it holds, checked against the bytes it has. A weight
// whose dims overflow or do not match its data must be refused when the model is read, naming the
// tensor: found later, the same defect surfaced as "out of memory" or a std::vector length error.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>
#include <string>

namespace ptqkit::onnxio {

// Bytes of raw data `tensor`'s dims and data type need; nullopt for types whose size ptqkit does
// not compute (strings, complex). Throws ptqkit::Error naming `where` and the tensor when a dim is
// negative or the size does not fit in 63 bits.
std::optional<uint64_t> ExpectedRawBytes(const onnx::TensorProto& tensor, const std::string& where);

// Every initializer and tensor attribute of `graph` (subgraphs included) whose raw data (or typed
// float/int64/double values) disagrees with its dims is refused, naming `path` and the tensor.
void CheckTensorSizes(const onnx::GraphProto& graph, const std::string& path);

}  // namespace ptqkit::onnxio
