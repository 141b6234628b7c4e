// A zero-constant Pad of the spatial dimensions right before a Conv folds into the Conv's `pads`:
// Conv(Pad(x, p), W) == Conv(x, W, pads = pads + p) exactly, since a Conv's own padding is zeros.
// TF and Keras exports write "SAME" padding as such a Pad (EfficientNet-Lite: 16 of them). Both
// runtimes fuse it in float, but with Q/DQ around the Pad neither can: ONNX Runtime has no integer
// Pad, so each one costs a DequantizeLinear, a float Pad and a QuantizeLinear, between two integer
// Convs. Folded, the Q/DQ sits on the Pad's input and quantizes the same values (padding zeros
// are exact in every grid).
// Applies when the Pad (mode constant, value 0 or absent, no `axes` input) pads neither the batch
// nor the channel axis, pads by constants >= 0, and its output is read only by input 0 of one Conv
// whose auto_pad is NOTSET. Main graph only.
#pragma once

#include <onnx/onnx_pb.h>

namespace ptqkit::canon {

// Whether `graph` has such a Pad (nothing is edited).
bool HasPadFold(const onnx::GraphProto& graph);

// Folds one such Pad into its Conv and removes it; false when there is none.
bool FoldOnePad(onnx::GraphProto* graph);

}  // namespace ptqkit::canon
