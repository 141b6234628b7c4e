// How scores are printed in the terminal tables and the HTML report (the JSON keeps exact values).
//   FormatScore: fixed `decimals` digits; exactly 0 prints "0"; a non-zero value that would print
//   as all zeros prints in scientific notation with `decimals` significant digits ("1.23e-05"),
//   so small scores keep their order and size; nan/inf as such; kNonFiniteScore (a probe whose
//   outputs turned NaN/Inf) as "NaN/Inf".
//   AlignColumn: pads a column of such strings to one width with the decimal points (or the last
//   integer digit, for "0") aligned, like the reference's tables.
//   AllBelowFloor: every non-zero score is finite and below kMeaningfulScoreFloor (the tables then
//   say so: such scores are near float rounding and the order among them is weak).
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

namespace ptqkit::sensitivity {

// 1e-6: float32 outputs differ by about 1e-7 relative from rounding alone; every metric here is a
// mean of per-sample differences, so scores below this are at the level of that noise.
constexpr double kMeaningfulScoreFloor = 1e-6;

// REQUIRES: 0 <= decimals <= 17.
std::string FormatScore(double value, int decimals);

bool AllBelowFloor(const std::vector<double>& scores);

// Every returned string has the same length (right-padded past the decimals where needed).
std::vector<std::string> AlignColumn(const std::vector<std::string>& cells);

// Removes trailing spaces from each line of `text` (tables pad their last column).
std::string TrimLineEnds(const std::string& text);

}  // namespace ptqkit::sensitivity
