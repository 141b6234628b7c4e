// Folds of a per-output-channel scale and shift into the Conv, ConvTranspose or Gemm before it:
// y = s ⊙ (W ∗ x + b) + t  ==  (s ⊙ W) ∗ x + (s ⊙ b + t), per output channel.
// BatchNormalization gives s = γ / √(σ² + ε), t = β − s·μ; a Mul by a channel constant gives s;
// an Add gives t. Each function folds the first match in node order and returns whether it did.
#pragma once

#include <onnx/onnx_pb.h>

#include <set>
#include <string>

namespace ptqkit::canon {

enum class LinearFold { kBatchNorm, kAffine };

// `matrices`: tensors known to be 2-D (MatrixTensors of a shape-inferred copy). A BatchNormalization
// after a MatMul whose input is one of them folds too, and the MatMul becomes a Gemm with the bias.
// Whether `graph` has a fold of `kind` (no weight is read).
bool HasLinearFold(const onnx::GraphProto& graph, LinearFold kind, const std::set<std::string>& matrices = {});

// Folds one match of `kind`; false when there is none.
bool FoldOneLinear(onnx::GraphProto* graph, LinearFold kind, const std::set<std::string>& matrices = {});

// Whether a BatchNormalization reads a MatMul's output (then shapes are worth inferring).
bool BatchNormAfterMatMul(const onnx::GraphProto& graph);

// Names of the tensors whose declared type (input, value_info, output) has rank 2.
std::set<std::string> MatrixTensors(const onnx::GraphProto& graph);

}  // namespace ptqkit::canon
