// The check behind --canonicalize: the model as given and as folded run on the first calibration
// samples (FP32 both, ONNX Runtime at its basic level, which folds nothing itself), and the largest
// absolute difference of any float graph output goes into the report and the summary. A fold is
// exact in real arithmetic; this measures what float rounding made of it, on the user's data.
#pragma once

#include "pipeline/model_options.h"
#include "runtime/prepared_model.h"

namespace ptqkit {

// Fills report's canonical_* fields and releases `canonical->before`. Only the counts when nothing
// was folded, no copy was kept or there is no data (null).
void CompareCanonicalForm(CanonicalForm* canonical, const onnx::ModelProto& folded, const CalibrationData* data,
                          const RuntimeOptions& runtime, QuantizeReport* report);

}  // namespace ptqkit
