// Low-precision conversion (--high_precision_dtype fp16|bf16): the last graph edit before saving.
// Everything the Q/DQ rewrite left in float32 — weights, biases, Q/DQ scales, Constant values and
// the activations between nodes — is turned into FLOAT16 (or BFLOAT16), so that the quantized
// model's "high precision" parts run at half width too.
//
// What stays float32, and why:
//  - Graph inputs and outputs keep their declared type: a Cast to the low type follows each float
//    input and each float output is produced by a Cast back to float32 (with direct_io_types the
//    declared I/O types change instead).
//  - Nodes of an op type the user excludes, ops outside the default domain, ops with subgraphs,
//    and default-domain ops not in LowPrecisionOpTypes(): they read and write float32, with Casts
//    at the edges. LowPrecisionOpTypes() lists the ops whose ONNX schema (opset >= 19) accepts the
//    type AND, for fp16, that ONNX Runtime's CPU provider runs (checked op by op with ORT 1.32).
//  - Inputs/outputs that ONNX types separately as float32: Resize `scales`, LayerNormalization's
//    Mean/InvStdDev outputs; for bf16 also Resize `roi` and Dropout `ratio`.
//  - A QuantizeLinear/DequantizeLinear whose constant scale would become zero, subnormal or
//    infinite in the low type: that Q/DQ stays float32 (Casts around it) with a warning naming the
//    scale. We do not clamp the scale to 2^-14, because a DequantizeLinear-only weight's stored
//    integers were rounded with the original scale and would silently change value.
//  - Integer, bool, FP8 and already-16-bit tensors are never touched.
// Other float values beyond the low type's range are clamped to its largest finite value, with a
// warning naming the tensor (an attention mask of -3.4e38 becomes -65504, not -inf).
//
// Element types are inferred by ptqkit (ONNX 1.12's inference does not know opset 19); a node
// whose tensors' types cannot be inferred is kept in float32. The default opset is raised to 19
// first (float16/bfloat16 Q/DQ scales need it). Output is deterministic: nodes are visited in
// graph order and new names are derived from tensor names.
// Stateless free functions; thread-safe on distinct models.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "quant/rewrite/fp16_types.h"  // LowPrecisionOpTypes

namespace ptqkit {

struct LowPrecisionOptions {
  // onnx::TensorProto::FLOAT16 or onnx::TensorProto::BFLOAT16.
  int32_t type = onnx::TensorProto::FLOAT16;
  // Op types kept in float32 (with Casts around them), exact names.
  std::vector<std::string> op_types_to_exclude;
  // Change the declared type of float graph inputs/outputs instead of adding boundary Casts.
  bool direct_io_types = false;
};

struct LowPrecisionStats {
  int converted_initializers = 0;  // initializers and Constant values now in the low type
  int casts_inserted = 0;
  std::vector<std::string> float32_nodes;  // nodes with float tensors kept in float32, graph order
};

// REQUIRES: the model passed onnxio::CheckModel (default opset 13..21). Throws ptqkit::Error for
// a type that is neither FLOAT16 nor BFLOAT16, or when the opset cannot be raised to 19.
LowPrecisionStats ConvertToLowPrecision(onnx::ModelProto* model, const LowPrecisionOptions& options);

// float32 <-> bfloat16 bits (round to nearest even; NaN stays NaN).
uint16_t FloatToBfloat16(float value);
float Bfloat16ToFloat(uint16_t bits);

}  // namespace ptqkit
