#include "report/score_format.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "sensitivity/scores_file.h"

namespace ptqkit::sensitivity {

std::string FormatScore(double value, int decimals) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (value == 0.0) return "0";
  // A probe whose outputs turned NaN/Inf (its exact score stays in the JSON).
  if (value >= kNonFiniteScore) return "NaN/Inf";
  std::string text = fmt::format("{:.{}f}", value, decimals);
  const bool all_zero = text.find_first_not_of("-0.") == std::string::npos;
  // Too small for the fixed decimals: the same number of significant digits in scientific
  // notation. "~0" for every row told a reader nothing on a model whose scores are all small.
  if (all_zero) return fmt::format("{:.{}e}", value, std::max(decimals - 1, 0));
  return text;
}

bool AllBelowFloor(const std::vector<double>& scores) {
  bool any = false;
  for (double v : scores) {
    if (v == 0.0) continue;
    if (!std::isfinite(v) || std::fabs(v) >= kMeaningfulScoreFloor) return false;
    any = true;
  }
  return any;
}

std::vector<std::string> AlignColumn(const std::vector<std::string>& cells) {
  size_t int_width = 0, frac_width = 0;
  for (const auto& cell : cells) {
    const size_t dot = std::min(cell.find('.'), cell.size());
    int_width = std::max(int_width, dot);
    frac_width = std::max(frac_width, cell.size() - dot);
  }
  std::vector<std::string> out;
  out.reserve(cells.size());
  for (const auto& cell : cells) {
    const size_t dot = std::min(cell.find('.'), cell.size());
    std::string padded(int_width - dot, ' ');
    padded += cell;
    padded.append(frac_width - (cell.size() - dot), ' ');
    out.push_back(std::move(padded));
  }
  return out;
}

std::string TrimLineEnds(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    const bool has_newline = end != std::string::npos;
    if (!has_newline) end = text.size();
    size_t last = end;
    while (last > start && text[last - 1] == ' ') --last;
    out.append(text, start, last - start);
    if (has_newline) out += '\n';
    start = end + 1;
  }
  return out;
}

}  // namespace ptqkit::sensitivity
