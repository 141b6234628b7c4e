// The HTML report of a quantize run (--report_html): one self-contained file with the run's
// settings, the loss table (quantized vs FP32 per output on the held-out samples) and its likely
// culprits, the accuracy-budget curve (nodes kept in float -> divergence, as an inline SVG with
// the budget drawn as a dashed line) and the nodes left in float with the reason.
// No scripts, no external resources, no timestamps (same run, same bytes). Pure function.
#pragma once

#include <string>

#include "ptqkit/quantize.h"

namespace ptqkit {

std::string RenderQuantizeReport(const QuantizeReport& report, const QuantizeOptions& options);

}  // namespace ptqkit
