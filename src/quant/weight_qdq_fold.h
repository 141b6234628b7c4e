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
// with raw data, read only by one QuantizeLinear (no attributes but axis) whose output only one
// DequantizeLinear reads, with the same scale (float32 initializer, scalar or one per channel) and
// an all-zero zero-point initializer of an 8-bit format's type. Everything else is left as it is.
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

// For a model that holds its weights quantized (DequantizeLinear of 8-bit codes, as a dq_only
// rewrite writes them) and runs with them as graph inputs: every per-channel DequantizeLinear of an
// initializer, all zero points 0, becomes a per-tensor one with scale 1 followed by a Mul by the
// channel scales shaped to broadcast along the axis. ONNX Runtime's per-channel kernel along the
// last axis (MatMul weights) goes one element at a time; these two run at memory speed. Same
// values: q * 1 is exact, then the one product q * s the per-channel kernel computes. Returns the
// number of DequantizeLinear nodes rewritten (main graph only).
int DequantizeThroughMul(onnx::ModelProto* model);

}  // namespace ptqkit
