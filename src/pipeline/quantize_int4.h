// QuantizeInt4: `--quantize_mode int4`, weight-only 4-bit quantization of MatMul/Gemm weights
// (see quant/int4_weight_only.h for the format, the AWQ-clip search and awq_lite's scaling).
//
// Steps: load and upgrade the model to opset 21 (blocked DequantizeLinear, INT4/UINT4 types, IR
// version >= 10); pick the targets; for awq_clip and awq_lite, one streaming pass of ONNX
// Runtime over the calibration batches that exposes every target's activation input as a graph
// output and folds each batch into that activation's block Gram matrices and per-channel sums
// of |x| before the next batch (memory: K x (block_size + 1) doubles per activation, whatever
// the number of samples); quantize each weight once; rewrite; save atomically. `rtn` reads no
// data.
// Called by Quantize(); same error contract (ptqkit::Error, nothing written on failure).
#pragma once

#include <chrono>

#include "ptqkit/quantize.h"
#include "quant/formats.h"

namespace ptqkit {

// Calibration methods int4 accepts; "" means the int4 default, awq_clip.
bool IsInt4CalibrationMethod(const std::string& method);

// REQUIRES: `format` is the row of options.quantize_mode, a weight-only 4-bit format (int4);
// `report.output_path` is set and was checked by Quantize(). Throws ptqkit::Error.
QuantizeReport QuantizeInt4(const QuantizeOptions& options, const QuantFormat& format, QuantizeReport report,
                            std::chrono::steady_clock::time_point start);

}  // namespace ptqkit
