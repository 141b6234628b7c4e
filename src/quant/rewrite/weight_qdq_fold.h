// FoldWeightQdq: replaces each constant weight's QuantizeLinear -> DequantizeLinear pair, as
// qdq_rewrite writes it, by the dequantized values themselves, in the weight's own buffer.
//
// Why: a model whose weights ONNX Runtime receives as inputs (over 256 MiB, runtime/session.h)
// quantizes and dequantizes every weight again at every Run(), and its per-channel kernels along
// the last axis (MatMul weights) handle one element at a time: the loss report of a 2 GiB model
// took 7x the whole quantization. Folded once, the evaluated graph runs at FP32 speed and holds no
// second copy of the weights. The values are those ONNX Runtime computes for the pair (the
// format's scalar reference numerics, bit-exact with its kernels: numerics.h), so outputs are the
// same bits.
//
// The model is edited in place and loses its FP32 weights: fold only a model that has been saved
// (or copied) already. Only the unambiguous pattern is folded: a float32 main-graph initializer
// with raw data, read only by one QuantizeLinear (no attributes but axis and output_dtype) whose
// output only one DequantizeLinear reads, with the same scale (float32 initializer, scalar or one
// per channel) and either an all-zero zero-point initializer of an 8-bit format's type or no zero
// point and that type in the Q's output_dtype (quant/formats/formats.h zero_point_free). Everything else is
// left as it is.
// Not thread-safe.
#pragma once

#include <onnx/onnx_pb.h>

namespace ptqkit {

// Returns the number of weights folded.
int FoldWeightQdq(onnx::ModelProto* model);

// FoldWeightQdq for a model about to be evaluated and then discarded, only where ONNX Runtime gets
// its weights as inputs (onnx/session_model.h): there the folded model runs the same kernels as the
// written one (weights as inputs are never pre-packed), so its outputs are the same bits, and the
// per-run weight quantization it saves is the slow part. Smaller models are left as written (a
// constant weight is pre-packed and summed in another order than a DQ output). Returns the number
// folded.
int FoldWeightQdqForSession(onnx::ModelProto* model);

// The operator ptqkit's own sessions run (runtime/run_ops.h) and no written model ever holds:
// FakeQuantizeWeight(W, scale) with attributes axis and element_type (the quantized ONNX type)
// computes what QuantizeLinear -> DequantizeLinear to that type with a zero point of 0 make of W,
// in one pass over W.
inline constexpr char kRunOpsDomain[] = "ai.ptqkit.run";
inline constexpr char kFakeQuantizeWeightOp[] = "FakeQuantizeWeight";

// For a model scored and discarded that reads its weights as graph inputs from the FP32 model's
// buffers (budget candidates and probes of a model over 256 MiB of weights, built light): each
// weight's QuantizeLinear -> DequantizeLinear pair of the pattern FoldWeightQdq folds, its weight
// possibly a placeholder (onnx/session_model.h), becomes one FakeQuantizeWeight node listed first.
// Why: ONNX Runtime's per-channel kernels along the last axis (MatMul weights) go one element at a
// time, and holding 8-bit codes instead costs a quarter of the weights for the whole scoring; this
// holds no copy, and at run time one dequantized weight at a time. Adds the domain's opset import.
// Returns the number of pairs replaced (main graph only).
int FakeQuantizeWeightsAtRun(onnx::ModelProto* model);

}  // namespace ptqkit
