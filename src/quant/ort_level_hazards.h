// What in a written Q/DQ model ONNX Runtime's default optimization level is known to compute
// differently from the graph as written, so that the summary can tell a user who validates the
// TensorRT-form file in ONNX Runtime which level to use.
#pragma once

#include <onnx/onnx_pb.h>

namespace ptqkit {

// QuantizeLinear nodes to an FP8 type (their zero point initializer is FLOAT8*) whose input a
// Relu or Clip produces, in the main graph. ONNX Runtime's ReluQuantRewrite drops such a Relu as
// if the quantized type clamped negatives (it reads the FP8 zero point as an integer one) and its
// ClipQuantRewrite fails on such a Clip; both run at the default level (ORT_ENABLE_ALL) and not at
// the basic one. `--target_runtime ort_cpu` writes the form without these pairs.
int CountFp8ClampQuantizePairs(const onnx::GraphProto& graph);

}  // namespace ptqkit
