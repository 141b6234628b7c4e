// Canonicalization before placement and calibration (--canonicalize, on by default): the graph is
// rewritten into the form TensorRT and ONNX Runtime run, so that Q/DQ is planned, and ranges are
// calibrated, on the tensors that will exist at deployment:
//  - a BatchNormalization (inference form) right after a Conv, ConvTranspose or Gemm is folded into
//    that node's weight and bias (both runtimes fold it before running; quantizing the unfolded
//    weight and then running a separate per-channel scale is not what either executes); after a
//    MatMul of a 2-D input (known from shape inference) too, the MatMul becoming a Gemm with the bias;
//  - a Mul or Add by a per-output-channel (or scalar) constant right after one of those nodes is
//    folded the same way (Paddle and TF exports write BatchNormalization as such a pair);
//  - the decompositions of HardSigmoid (Clip(x + b, 0, m) / m, or * 1/m) and HardSwish (x times
//    that) become the single operator (HardSwish from opset 14, else Mul(x, HardSigmoid(x))), so the
//    placement rules see one activation and never put Q/DQ inside it;
//  - a zero-constant Pad of the spatial axes before a Conv becomes the Conv's own padding (pad_fold.h).
// A fold applies only where it is exact in real arithmetic: the folded node's output is read by
// nothing else, the weights are constants (initializers or Constant nodes, possibly through Identity
// or Cast nodes) that no caller can override, and every constant broadcasts along the output
// channel axis only. Values are computed in double and rounded once to the weight's element type;
// the pipeline compares the model's outputs before and after on calibration samples and reports the
// largest difference. Main graph only (control-flow subgraphs are left as they are).
#pragma once

#include <onnx/onnx_pb.h>

namespace ptqkit {

struct CanonicalizeStats {
  int batchnorms_folded = 0;   // into the preceding Conv/ConvTranspose/Gemm/MatMul
  int affines_folded = 0;      // Mul/Add by a channel constant folded into weight and bias
  int activations_fused = 0;   // HardSigmoid/HardSwish decompositions replaced by the operator
  int pads_folded = 0;         // Pad nodes folded into the Conv after them
  int total() const { return batchnorms_folded + affines_folded + activations_fused + pads_folded; }
};

// Whether Canonicalize would change anything (cheap: no weight is read or copied).
bool HasCanonicalFolds(const onnx::ModelProto& model);

// Applies every fold above until none is left. Throws ptqkit::Error only on a malformed model
// (a BatchNormalization whose constants disagree with the weight's channel count is left alone).
CanonicalizeStats Canonicalize(onnx::ModelProto* model);

}  // namespace ptqkit
