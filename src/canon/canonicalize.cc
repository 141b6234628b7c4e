#include "canon/canonicalize.h"

#include "canon/activation_fusion.h"
#include "canon/linear_folds.h"
#include "canon/pad_fold.h"
#include "onnx/onnx_library.h"

namespace ptqkit {
namespace {

// The 2-D tensors, where a BatchNormalization reads a MatMul (other models skip shape inference).
std::set<std::string> MatricesIfNeeded(const onnx::ModelProto& model) {
  if (!canon::BatchNormAfterMatMul(model.graph())) return {};
  // InferShapes sets the large weights aside while it copies and puts them back: `model` is the
  // same on return, and no second copy of its weights is made.
  return canon::MatrixTensors(onnxio::InferShapes(const_cast<onnx::ModelProto*>(&model)).graph());
}

}  // namespace

bool HasCanonicalFolds(const onnx::ModelProto& model) {
  return canon::HasLinearFold(model.graph(), canon::LinearFold::kBatchNorm, MatricesIfNeeded(model)) ||
         canon::HasLinearFold(model.graph(), canon::LinearFold::kAffine) || canon::HasActivationFusion(model) ||
         canon::HasPadFold(model.graph());
}

CanonicalizeStats Canonicalize(onnx::ModelProto* model) {
  CanonicalizeStats stats;
  // Activations first: a decomposition's Add/Mul by a scalar must not be folded into a Conv before it.
  while (canon::FuseOneActivation(model)) ++stats.activations_fused;
  const std::set<std::string> matrices = MatricesIfNeeded(*model);
  while (canon::FoldOneLinear(model->mutable_graph(), canon::LinearFold::kBatchNorm, matrices)) {
    ++stats.batchnorms_folded;
  }
  while (canon::FoldOneLinear(model->mutable_graph(), canon::LinearFold::kAffine)) ++stats.affines_folded;
  while (canon::FoldOnePad(model->mutable_graph())) ++stats.pads_folded;
  return stats;
}

}  // namespace ptqkit
