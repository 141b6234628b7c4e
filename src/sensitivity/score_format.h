// How scores are printed in the terminal tables and the HTML report (the JSON keeps exact values).
//   FormatScore: fixed `decimals` digits; exactly 0 prints "0"; a non-zero value that would print
//   as all zeros prints "~0" (so "tiny but measured" differs from "no effect"); nan/inf as such;
//   kNonFiniteScore (a probe whose outputs turned NaN/Inf) as "NaN/Inf".
//   AlignColumn: pads a column of such strings to one width with the decimal points (or the last
//   integer digit, for "0" and "~0") aligned, like the reference's tables.
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

namespace ptqkit::sensitivity {

// REQUIRES: 0 <= decimals <= 17.
std::string FormatScore(double value, int decimals);

// Every returned string has the same length (right-padded past the decimals where needed).
std::vector<std::string> AlignColumn(const std::vector<std::string>& cells);

// Removes trailing spaces from each line of `text` (tables pad their last column).
std::string TrimLineEnds(const std::string& text);

}  // namespace ptqkit::sensitivity
