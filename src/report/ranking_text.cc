#include "report/ranking_text.h"

#include <fmt/format.h>

#include <algorithm>

#include "sensitivity/rank_order.h"
#include "report/score_format.h"

namespace ptqkit::sensitivity {

std::string RenderRanking(const SensitivityResult& result, bool show_zero_scores) {
  std::string out = fmt::format("Sensitivity scan ({} / {} / {}):\n", result.target_precision,
                                result.metric, result.granularity);
  std::vector<std::pair<std::string, double>> shown;
  int hidden = 0;
  for (auto& entry : RankByScore(result.scores)) {
    if (entry.second == 0.0 && !show_zero_scores) {
      ++hidden;
    } else {
      shown.push_back(std::move(entry));
    }
  }
  size_t name_width = 0;
  std::vector<std::string> cells;
  for (const auto& [name, score] : shown) {
    name_width = std::max(name_width, name.size());
    cells.push_back(FormatScore(score, 3));
  }
  cells = AlignColumn(cells);
  for (size_t i = 0; i < shown.size(); ++i) {
    std::string line = fmt::format("  {:<{}}{}", shown[i].first, name_width + 2, cells[i]);
    if (i == 0) {
      line += "  <-- highest impact";
    } else if (i + 1 == shown.size()) {
      line += "  <-- lowest impact";
    }
    out += line + "\n";
  }
  std::vector<double> values;
  for (const auto& entry : shown) values.push_back(entry.second);
  if (AllBelowFloor(values)) {
    out += fmt::format(
        "  (every score is below {:g}: quantizing any one target changes the outputs by about float rounding, so "
        "the order is weak; a near-constant output, such as an untrained head, does this)\n",
        kMeaningfulScoreFloor);
  }
  if (hidden > 0) {
    out += fmt::format(
        "  ({} target(s) with score 0.0 hidden; pass --show_zero_scores or read the JSON)\n",
        hidden);
  }
  if (!result.non_finite.empty()) {
    out += fmt::format(
        "  ({} target(s) made the outputs NaN/Inf and rank first; see \"non_finite\" in the JSON)\n",
        result.non_finite.size());
  }
  if (!result.failed.empty()) {
    out += fmt::format("  ({} target(s) failed and are not ranked; see \"failed\" in the JSON)\n",
                       result.failed.size());
  }
  if (result.scores.empty() && result.failed.empty()) out += "  (no targets were scored)\n";
  return TrimLineEnds(out);
}

}  // namespace ptqkit::sensitivity
