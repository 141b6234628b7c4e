// The options a sensitivity scan shares with quantize (the model, the data, calibration and the
// runtime) come from QuantizeOptions in one place: `ptqkit sensitivity` and
// ptqkit.sensitivity.score() parse them with quantize's option-table entries, and the accuracy
// budget's ranking scan must probe as its quantize run calibrates. Both structs derive from
// SharedRunOptions (ptqkit/run_options.h), so a field declared there is copied with the rest.
#pragma once

#include "ptqkit/quantize.h"
#include "ptqkit/sensitivity.h"

namespace ptqkit {

// Copies the shared fields of `from` into `to`. An empty calibration method leaves the scan's own
// (mse, quantize's int8/fp8 default); the scan's own choices (granularity, metric, precision,
// scope, synthetic sample count, outputs) are not touched.
void UseQuantizeCalibration(const QuantizeOptions& from, SensitivityOptions& to);

}  // namespace ptqkit
