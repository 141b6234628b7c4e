// Activations of the block-scaled formats (`--quantize_activations` with nvfp4 or mxfp8): each
// block of the format's size along an activation's last axis gets its scale at run time, from its
// own absolute maximum, as TensorRT's DynamicQuantize layer computes it. No standard ONNX operator
// computes a block's scale, so the file holds one of two forms:
//
//  - trt: TensorRT's ops, as NVIDIA's exporters write them. nvfp4:
//      trt::TRT_FP4DynamicQuantize(x, global) -> (values FLOAT4E2M1, codes FLOAT8E4M3FN)
//      DequantizeLinear(values, DequantizeLinear(codes, global), axis -1, block_size 16)
//    where `global` (amax / (6 x 448), amax calibrated per tensor) scales the E4M3 block codes.
//    mxfp8: trt::TRT_MXFP8DynamicQuantize(x) -> (values FLOAT8E4M3FN, E8M0 exponents as UINT8),
//      trt::TRT_MXFP8DequantizeLinear(values, exponents, axis -1, block_size 32).
//    ONNX Runtime has no kernel for them.
//  - ort: the same numbers from standard operators (opset >= 21) that ONNX Runtime runs: the blocks
//    are a [-1, block] Reshape; per block the absolute maximum (ReduceMax); the scale: nvfp4
//    E4M3(amax / 6 / global) x global (E4M3 rounding by a QuantizeLinear/DequantizeLinear pair),
//    mxfp8 the smallest power of two >= amax / 448 (as the weights' codec, block_codec.h; floored
//    at 2^-126); then each value divided by its scale, rounded to the element grid (E2M1 by
//    Round on its three step sizes, half to even; E4M3 by a Q/DQ pair, saturating), and multiplied
//    back. A block of zeros gives zeros.
// The loss report runs the trt form as its ort twin (EmulateTrtDynamicQuantize): same values.
// Float32 activations only.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>

#include "onnx/graph_editor.h"
#include "quant/formats/formats.h"

namespace ptqkit {

// Inserts the fake-quantized copy of activation `x` before node `before`, in the trt or ort form;
// returns the name of its output. `amax` is x's calibrated absolute maximum (nvfp4's global scale;
// mxfp8 ignores it). REQUIRES: format.block_codec->trt_dynamic_quantize is set.
std::string AddDynamicBlockQdq(GraphEditor* editor, const QuantFormat& format, const std::string& x, float amax,
                               int before, bool trt_form);

// Whether `graph` holds TensorRT's dynamic quantizers (the trt form above).
bool HasTrtDynamicQuantize(const onnx::GraphProto& graph);
// Replaces each trt-form chain of `model`'s graph with the ort form computing the same values
// (same output name), and drops the "trt" opset import when nothing else uses it.
void EmulateTrtDynamicQuantize(onnx::ModelProto* model);

// The "trt" domain's opset import, added when missing.
void ImportTrtDomain(onnx::ModelProto* model);

}  // namespace ptqkit
