// The options that edit the model itself before placement, applied the same way by quantize,
// the INT4 pipeline and calibrate (so a table calibrated alone matches the quantize run):
//  --override_shapes  graph inputs made static (rank must match), then the rest follows at run time;
//  --simplify         constant subgraphs folded by ONNX Runtime, dead nodes removed (pipeline/simplify.h);
//  --opset            the output's default-domain opset, at least the mode's minimum and the model's;
//  --canonicalize     BatchNormalization / channel Mul-Add folds and activation fusion (canon/canonicalize.h).
#pragma once

#include <cstdint>
#include <optional>

#include "canon/canonicalize.h"

#include "quant/placement/placement.h"
#include "runtime/prepared_model.h"
#include "ptqkit/quantize.h"

namespace ptqkit {

// The placement part of the quantize options (the run's plan, the calibrate plan, budget and
// autotune candidates).
PlacementOptions PlacementFor(const QuantizeOptions& options);

// What --canonicalize folded, and the model as it was before (kept only when something was folded
// and the model is small enough to hold twice: for CompareCanonicalForm).
struct CanonicalForm {
  CanonicalizeStats stats;
  std::optional<onnx::ModelProto> before;
};

// `mode_min_opset`: the opset the quantization mode needs (the model is already at least there).
// `canonical` (may be null) receives what the canonicalization did.
// Throws ptqkit::Error naming an unknown input or a rank that does not match.
void ApplyModelOptions(const QuantizeOptions& options, int64_t mode_min_opset, PreparedModel* model,
                       CanonicalForm* canonical = nullptr);

}  // namespace ptqkit
