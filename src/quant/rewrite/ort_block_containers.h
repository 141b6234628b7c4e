// nvfp4 and mxfp8 files in containers ONNX Runtime's CPU kernels run (block_codec.h): the writer
// always stores the standard ones (FLOAT4E2M1 values, FLOAT8E8M0 scales); --target_runtime
// ort_cpu and the loss report convert them with the same dequantized values.
// Free functions on a graph; thread-safe for distinct graphs.
#pragma once

#include <onnx/onnx_pb.h>

namespace ptqkit {

// Whether some DequantizeLinear of `graph` reads a FLOAT4E2M1 value or FLOAT8E8M0 scale
// initializer (nvfp4/mxfp8's standard containers, which ONNX Runtime's CPU kernels do not run).
bool HasStandardBlockContainers(const onnx::GraphProto& graph);
// Rewrites those initializers into the ort_cpu containers in place: E2M1 values as FLOAT8E4M3FN
// bytes, E8M0 scales as the float type the DequantizeLinear's output_dtype names (the attribute
// is dropped). The dequantized weights stay bit for bit the same; the opset is left as it is.
void UseOrtCpuContainers(onnx::GraphProto* graph);

}  // namespace ptqkit
