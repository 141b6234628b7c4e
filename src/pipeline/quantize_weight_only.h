// QuantizeWeightOnly: the steps of Quantize() that differ for the weight-only modes
// (`--quantize_mode int4 | nvfp4 | mxfp8`): MatMul/Gemm weights quantized in blocks along K, each
// format's encoding from its row's block codec (quant/block_codec.h), chosen by the weight-only
// search (quant/blocked_weight_search.h). The plan is the format's placement profile and the file is
// written by the same Q/DQ writer as int8/fp8 (quant/placement.h, quant/qdq_rewrite.h); what
// differs is what calibration measures (block Gram matrices, not ranges) and what the budget
// chooses (INT8 weights, not float nodes).
//
// Steps: load and upgrade the model to the opset the output needs (blocked DequantizeLinear: 21;
// nvfp4's FLOAT4E2M1: 23; mxfp8's E8M0 scales: 24; 21 for the ONNX Runtime containers); plan;
// with calibration data, hold out samples for the loss report, then for awq_clip and awq_lite one
// streaming pass of ONNX Runtime over the other samples that folds every planned weight's
// activation input into its block Gram matrices and per-channel sums of |x| (memory: K x
// (block_size + 1) doubles per activation, whatever the number of samples) and records the amax of
// nvfp4's dynamic-block activations (--quantize_activations), and one FP32 run on the held-out
// samples; with --mixed_precision and --accuracy_budget, choose the INT8 weights
// (pipeline/mixed_precision_search.h); quantize each weight once; rewrite; stage the file, measure
// the loss, commit. `rtn` reads data only for the loss report (and nvfp4's activation ranges).
// The calibration pass is pipeline/gram_capture.h.
// Called by Quantize(); same error contract (ptqkit::Error, nothing written on failure).
#pragma once

#include <chrono>

#include "ptqkit/quantize.h"
#include "quant/formats.h"

namespace ptqkit {

// Calibration methods of the weight-only modes; "" means the format's default.
bool IsWeightOnlyCalibrationMethod(const std::string& method);

// REQUIRES: `format` is the row of options.quantize_mode, a weight-only format (int4, nvfp4, mxfp8);
// `report.output_path` is set and was checked by Quantize(). Throws ptqkit::Error.
QuantizeReport QuantizeWeightOnly(const QuantizeOptions& options, const QuantFormat& format, QuantizeReport report,
                            std::chrono::steady_clock::time_point start);

}  // namespace ptqkit
