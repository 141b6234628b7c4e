// include/ptqkit/tensor.h spells DataType's values as numbers (a public header cannot include the
// ONNX protos); this file checks, at compile time, that each is the ONNX enum it stands for.
#include <onnx/onnx_pb.h>

#include "ptqkit/tensor.h"

namespace ptqkit {
namespace {

constexpr bool Same(DataType ours, onnx::TensorProto_DataType theirs) {
  return static_cast<int32_t>(ours) == static_cast<int32_t>(theirs);
}

static_assert(Same(DataType::kUndefined, onnx::TensorProto_DataType_UNDEFINED));
static_assert(Same(DataType::kFloat, onnx::TensorProto_DataType_FLOAT));
static_assert(Same(DataType::kUint8, onnx::TensorProto_DataType_UINT8));
static_assert(Same(DataType::kInt8, onnx::TensorProto_DataType_INT8));
static_assert(Same(DataType::kUint16, onnx::TensorProto_DataType_UINT16));
static_assert(Same(DataType::kInt16, onnx::TensorProto_DataType_INT16));
static_assert(Same(DataType::kInt32, onnx::TensorProto_DataType_INT32));
static_assert(Same(DataType::kInt64, onnx::TensorProto_DataType_INT64));
static_assert(Same(DataType::kString, onnx::TensorProto_DataType_STRING));
static_assert(Same(DataType::kBool, onnx::TensorProto_DataType_BOOL));
static_assert(Same(DataType::kFloat16, onnx::TensorProto_DataType_FLOAT16));
static_assert(Same(DataType::kDouble, onnx::TensorProto_DataType_DOUBLE));
static_assert(Same(DataType::kUint32, onnx::TensorProto_DataType_UINT32));
static_assert(Same(DataType::kUint64, onnx::TensorProto_DataType_UINT64));
static_assert(Same(DataType::kBFloat16, onnx::TensorProto_DataType_BFLOAT16));
static_assert(Same(DataType::kFloat8E4M3FN, onnx::TensorProto_DataType_FLOAT8E4M3FN));
static_assert(Same(DataType::kUint4, onnx::TensorProto_DataType_UINT4));
static_assert(Same(DataType::kInt4, onnx::TensorProto_DataType_INT4));

}  // namespace
}  // namespace ptqkit
