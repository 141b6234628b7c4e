// Folds of a per-output-channel scale and shift into the Conv, ConvTranspose or Gemm before it:
// y = s ⊙ (W ∗ x + b) + t  ==  (s ⊙ W) ∗ x + (s ⊙ b + t), per output channel.
// BatchNormalization gives s = γ / √(σ² + ε), t = β − s·μ; a Mul by a channel constant gives s;
// an Add gives t. Each function folds the first match in node order and returns whether it did.
#pragma once

#include <onnx/onnx_pb.h>

namespace ptqkit::canon {

enum class LinearFold { kBatchNorm, kAffine };

// Whether `graph` has a fold of `kind` (no weight is read).
bool HasLinearFold(const onnx::GraphProto& graph, LinearFold kind);

// Folds one match of `kind`; false when there is none.
bool FoldOneLinear(onnx::GraphProto* graph, LinearFold kind);

}  // namespace ptqkit::canon
