// HardSigmoid and HardSwish written out in elementary ops, recognised and replaced by the operator:
//   HardSigmoid(x; α = 1/m, β = b/m) = Clip(x + b, 0, m) / m   (or · k with k·m = 1: α = k, β = k·b)
//   HardSwish(x) = x · HardSigmoid(x; 1/6, 1/2)   (also written x · Clip(x + 3, 0, 6) / 6)
// HardSwish exists from opset 14; below it the canonical form is Mul(x, HardSigmoid(x)).
// Every intermediate tensor must be read only inside the pattern.
#pragma once

#include <onnx/onnx_pb.h>

namespace ptqkit::canon {

// Whether `model`'s main graph has such a decomposition.
bool HasActivationFusion(const onnx::ModelProto& model);

// Replaces one decomposition by the operator; false when there is none.
bool FuseOneActivation(onnx::ModelProto* model);

}  // namespace ptqkit::canon
