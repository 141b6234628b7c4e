// The terminal rendering of a sensitivity scan, in the reference's shape:
//
//   Sensitivity scan (int8 / kl_div / op_type):
//     Add                 2.848  <-- highest impact
//     ...
//     MatMul              0.015  <-- lowest impact
//     (4 target(s) with score 0.0 hidden; pass --show_zero_scores or read the JSON)
//
// Rows in rank order (score descending, ties by name). Names are padded to the longest shown
// name + 2; scores have 3 decimals, decimal-aligned (3 significant digits in scientific notation
// for a non-zero score below 0.0005, "0" for an exact zero). Targets scoring exactly 0 are hidden
// unless show_zero_scores. When every shown score is below kMeaningfulScoreFloor a line says so.
// Failed targets are counted on a last line. The caller prints "Wrote <path>".
// Pure function; thread-safe.
#pragma once

#include <string>

#include "sensitivity/scores_file.h"

namespace ptqkit::sensitivity {

// Every line ends with '\n'.
std::string RenderRanking(const SensitivityResult& result, bool show_zero_scores);

}  // namespace ptqkit::sensitivity
