// ONNX Runtime's fastest CPU form of a quantized MatMul whose output stays float (a transformer
// encoder's projections): its input quantized at run time, as onnxruntime.quantization's
// quantize_dynamic writes it and ONNX Runtime's MatMulIntegerToFloatFusion and
// DynamicQuantizeMatMulFusion turn into one integer kernel with the bias folded in:
//   x -> DynamicQuantizeLinear -> (xq, xs, xzp)      (one per activation, shared by its MatMuls)
//   MatMulInteger(xq, Wq, xzp, Wzp) -> Cast(float) -> Mul(., Mul(xs, Ws)) [-> Add(., bias)]
// The static form (DQ -> MatMul) becomes MatMulIntegerToFloat without the bias, which then runs as
// a separate Add; with a static scale the Mul(xs, Ws) would be a constant that ONNX Runtime folds
// before its fusion can match, so the run-time range is also what makes the fusion apply.
// Measured on all-MiniLM-L6 (bench/README.md "Speed"): static 2.0x FP32, this form on par with
// quantize_dynamic. The run-time range is uint8 over [min(x, 0), max(x, 0)] of each call.
#pragma once

#include <onnx/onnx_pb.h>

#include <set>
#include <string>

namespace ptqkit {

// Rewrites every MatMul of `graph` (not its subgraphs) whose input A comes out of a per-tensor
// UINT8 DequantizeLinear, whose input B comes out of a DequantizeLinear of a constant rank-2 INT8
// initializer (per tensor or per column, axis 1), and whose output no QuantizeLinear reads, into the
// form above: A's QuantizeLinear input is quantized at run time instead, the MatMul reads the INT8
// weight directly, and a bias Add after it gets the constant as its second input (Add commutes;
// ONNX Runtime folds only that order). Q/DQ nodes nothing reads any more are removed. New names
// avoid `reserved` (may be null) and every name of `graph`. Returns the number of MatMuls rewritten.
int WriteDynamicMatMuls(onnx::GraphProto* graph, const std::set<std::string>* reserved);

}  // namespace ptqkit
