// SummarizeExclusion (include/ptqkit/picker.h): what an exclusion list covers.
#include <fmt/format.h>

#include <set>

#include "ptqkit/picker.h"
#include "sensitivity/score_checks.h"
#include "sensitivity/scores_file.h"

namespace ptqkit {

ExclusionSummary SummarizeExclusion(const std::map<std::string, double>& scores,
                                    const std::vector<std::string>& excluded) {
  ExclusionSummary summary;
  const std::map<std::string, double> checked =
      sensitivity::CheckedScores(scores, summary.warnings);
  std::set<std::string> counted;
  std::vector<std::string> unknown, repeated;
  for (const auto& name : excluded) {
    const auto it = checked.find(name);
    if (it == checked.end()) {
      unknown.push_back(name);
    } else if (!counted.insert(name).second) {
      repeated.push_back(name);
    }
  }
  // Both sums in the same (name) order, so excluding everything gives exactly 100%.
  for (const auto& [name, score] : checked) {
    if (score >= kNonFiniteScore) {  // NaN/Inf probes: counted apart, their score would swamp the mass
      ++summary.num_non_finite;
      continue;
    }
    summary.total_mass += score;
    if (counted.count(name) != 0) summary.excluded_mass += score;
  }
  summary.num_excluded = static_cast<int64_t>(counted.size());
  summary.num_previously_quantized = static_cast<int64_t>(checked.size());
  summary.num_remaining_quantized = summary.num_previously_quantized - summary.num_excluded;
  summary.coverage_pct =
      summary.total_mass > 0.0 ? summary.excluded_mass / summary.total_mass * 100.0 : 0.0;
  auto quoted = [](const std::vector<std::string>& names) {
    std::string list;
    for (const auto& n : names) list += fmt::format("{}'{}'", list.empty() ? "" : ", ", n);
    return list;
  };
  if (!unknown.empty()) {
    summary.warnings.push_back(
        fmt::format("{} excluded name(s) have no score and are not counted: {}", unknown.size(),
                    quoted(unknown)));
  }
  if (!repeated.empty()) {
    summary.warnings.push_back(
        fmt::format("{} excluded name(s) are given more than once and counted once: {}",
                    repeated.size(), quoted(repeated)));
  }
  return summary;
}

}  // namespace ptqkit
