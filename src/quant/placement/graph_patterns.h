// Small structural questions about a graph that the placement rules ask: is this tensor the end
// of a Conv epilogue, does this MatMul belong to an attention core, what are a GEMM's K and N.
// Pure functions over a GraphIndex.
#pragma once

#include <string>
#include <utility>

#include "onnx/graph_index.h"

namespace ptqkit {

// If `tensor` is produced by a Conv/ConvTranspose, possibly followed by BatchNormalization and
// pointwise activations (each step's only consumer being the next), returns that Conv's index.
// With `through_activations` false only BatchNormalization may sit in between (the residual-Add
// fusion TensorRT does). Otherwise -1.
int ConvGroupSource(const GraphIndex& graph, const std::string& tensor, bool through_activations);

// Walks back through layout ops (Reshape, Transpose, Flatten, Squeeze, Unsqueeze) first.
int ConvSourceThroughLayout(const GraphIndex& graph, const std::string& tensor);

// True for MatMul nodes in the attention core MatMul -> [Mul|Div] -> [Add mask] -> Softmax -> MatMul.
bool IsAttentionMatMul(const GraphIndex& graph, int node);

// True for the Mul by a constant that ends an exported GELU, Mul(Mul(x, Add(Erf(..), ..)), 0.5):
// the constant ONNX Runtime's GeluFusion requires to be the scalar 0.5.
bool IsExportedGeluTail(const GraphIndex& graph, int mul);

// {K, N} of a MatMul/Gemm whose weight is constant; {-1, -1} when unknown.
std::pair<int64_t, int64_t> GemmDims(const GraphIndex& graph, int node);

}  // namespace ptqkit
