#include "canon/canonicalize.h"

#include "canon/activation_fusion.h"
#include "canon/linear_folds.h"

namespace ptqkit {

bool HasCanonicalFolds(const onnx::ModelProto& model) {
  return canon::HasLinearFold(model.graph(), canon::LinearFold::kBatchNorm) ||
         canon::HasLinearFold(model.graph(), canon::LinearFold::kAffine) || canon::HasActivationFusion(model);
}

CanonicalizeStats Canonicalize(onnx::ModelProto* model) {
  CanonicalizeStats stats;
  // Activations first: a decomposition's Add/Mul by a scalar must not be folded into a Conv before it.
  while (canon::FuseOneActivation(model)) ++stats.activations_fused;
  while (canon::FoldOneLinear(model->mutable_graph(), canon::LinearFold::kBatchNorm)) ++stats.batchnorms_folded;
  while (canon::FoldOneLinear(model->mutable_graph(), canon::LinearFold::kAffine)) ++stats.affines_folded;
  return stats;
}

}  // namespace ptqkit
