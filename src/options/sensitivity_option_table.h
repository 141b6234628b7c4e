// The sensitivity scan's own options (ptqkit/sensitivity.h) as option-table entries, for
// BuildTable() in quantize_option_table.cc. The data, calibration and runtime options the scan
// shares with quantize are quantize's own entries, marked for kSensitivity there; these are the
// rest: what to probe, how to score, and where the results go (QuantizeSettings::scan).
// `ptqkit sensitivity`, ptqkit.sensitivity.score() and ptqkit.distributed.score() all take their
// options from the table, so each is declared once.
#pragma once

#include <vector>

#include "options/option_spec.h"

namespace ptqkit::options {

void AddSensitivityOptions(std::vector<OptionSpec>& table);

}  // namespace ptqkit::options
