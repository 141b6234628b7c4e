// A float16 hazard of written Q/DQ models in ONNX Runtime, for the summary: ONNX Runtime's
// WeightBiasQuantization rule (basic level and above) rewrites the float bias b of a Conv,
// ConvTranspose or Gemm whose input comes out of a per-tensor DequantizeLinear and whose weight
// comes out of a DequantizeLinear into DQ(Cast<int32>(Round(b / (x_scale * w_scale)))), computed
// in the scales' type. In a float16 model that quotient passes float16's 65504 as soon as the two
// scales are small (FP8's amax/448 on both sides does it on ResNets): it becomes inf, the int32
// cast is undefined and the bias garbage. TensorRT keeps the bias in float and is not affected;
// ptqkit's own sessions disable the rule (runtime/session.cc).
#pragma once

#include <onnx/onnx_pb.h>

namespace ptqkit {

// The Conv/ConvTranspose/Gemm nodes of the main graph whose float16 bias that rule turns into
// inf: some |b_c| / (x_scale * w_scale_c), each step rounded to float16, is not a finite float16.
int CountFp16BiasOverflows(const onnx::GraphProto& graph);

}  // namespace ptqkit
