// The end-of-run summary of Quantize(), as text: what `ptqkit quantize` prints and what
// ptqkit.quantize() logs (one formatter for both front ends).
#pragma once

#include <string>

#include "ptqkit/quantize.h"

namespace ptqkit {

std::string FormatQuantizeSummary(const QuantizeReport& report, const QuantizeOptions& options);

}  // namespace ptqkit
