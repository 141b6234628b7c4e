// SuggestExclusion (include/ptqkit/picker.h): validate, rank (targets or blocks), find the cut.
#include "ptqkit/picker.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "ptqkit/error.h"
#include "sensitivity/blocks.h"
#include "sensitivity/score_checks.h"
#include "sensitivity/scores_file.h"

namespace ptqkit {
namespace {

// Relative tolerance on the coverage budget: the running sum and coverage x total are both
// rounded, and coverage = 1.0 must take every entry even when the sum lands one ulp above.
constexpr double kCoverageTolerance = 1e-9;

void ValidateOptions(const PickerOptions& o) {
  if (!(o.coverage >= 0.0 && o.coverage <= 1.0)) {
    throw Error(fmt::format("coverage must be between 0 and 1, got {}", o.coverage));
  }
  if (o.threshold && !(*o.threshold >= 0.0 && std::isfinite(*o.threshold))) {
    throw Error(fmt::format("threshold must be a finite number >= 0, got {}", *o.threshold));
  }
  if (o.max_nodes && *o.max_nodes < 0) {
    throw Error(fmt::format("max_nodes must be >= 0, got {}", *o.max_nodes));
  }
  if (!std::isfinite(o.min_score_floor)) {
    throw Error(fmt::format("min_score_floor must be a finite number, got {}", o.min_score_floor));
  }
  if (o.near_tie_ratio && !(*o.near_tie_ratio > 0.0 && *o.near_tie_ratio <= 1.0)) {
    throw Error(
        fmt::format("near_tie_ratio must be in (0, 1] (or none), got {}", *o.near_tie_ratio));
  }
}

// Entries the mode itself takes (coverage or threshold), ignoring floor and cap.
size_t ModeCut(const std::vector<RankedEntry>& ranking, const PickerOptions& o) {
  size_t cut = 0;
  if (o.threshold) {
    while (cut < ranking.size() && ranking[cut].score > *o.threshold) ++cut;
    return cut;
  }
  double total = 0.0;
  for (const auto& entry : ranking) total += entry.score;
  const double budget = o.coverage * total;
  const double tolerance = kCoverageTolerance * total;
  double running = 0.0;
  while (cut < ranking.size()) {
    running += ranking[cut].score;
    if (running > budget + tolerance) break;
    ++cut;
  }
  return cut;
}

std::string ModeRule(const PickerOptions& o) {
  return o.threshold ? fmt::format("threshold={}", *o.threshold)
                     : fmt::format("coverage={}", o.coverage);
}

}  // namespace

PickResult SuggestExclusion(const std::map<std::string, double>& scores,
                            const PickerOptions& options) {
  ValidateOptions(options);
  PickResult result;
  const std::map<std::string, double> checked = sensitivity::CheckedScores(scores, result.warnings);
  // NaN/Inf targets are excluded unconditionally below; the mode ranks the rest (their huge score
  // would overflow the coverage mass).
  std::map<std::string, double> ranked;
  for (const auto& [name, score] : checked)
    if (score < kNonFiniteScore) ranked[name] = score;
  result.block_mode = !options.blocks.empty();
  if (result.block_mode) {
    result.block_agg = options.block_agg;
    result.ranking = sensitivity::RankBlocks(
        ranked, options.blocks, sensitivity::ParseBlockAgg(options.block_agg), result.warnings);
  } else {
    sensitivity::ParseBlockAgg(options.block_agg);  // a typo is an error even when unused
    result.ranking = sensitivity::RankTargets(ranked);
  }
  const std::vector<RankedEntry>& ranking = result.ranking;

  // The selection is a prefix: the tightest of the mode, the floor and the cap decides its end.
  result.cut = ModeCut(ranking, options);
  result.cut_rule = ModeRule(options);
  size_t above_floor = 0;
  while (above_floor < ranking.size() && ranking[above_floor].score > options.min_score_floor) {
    ++above_floor;
  }
  if (above_floor < result.cut) {
    result.cut = above_floor;
    result.cut_rule = fmt::format("min_score_floor={}", options.min_score_floor);
  }
  if (options.max_nodes && static_cast<size_t>(*options.max_nodes) < result.cut) {
    result.cut = static_cast<size_t>(*options.max_nodes);
    result.cut_rule = fmt::format("max_nodes={}", *options.max_nodes);
  }
  for (size_t i = 0; i < result.cut; ++i) {
    for (const auto& member : ranking[i].members) result.excluded.push_back(member);
  }
  // Targets whose probe turned the outputs NaN/Inf (score kNonFiniteScore) are always excluded,
  // whatever the mode, floor or cap chose.
  std::vector<std::string> forced;
  for (const auto& [name, score] : checked) {
    if (score < kNonFiniteScore) continue;
    forced.push_back(name);
    result.warnings.push_back(fmt::format(
        "'{}' is excluded whatever the limits: quantizing it made the outputs NaN/Inf", name));
  }
  result.excluded.insert(result.excluded.begin(), forced.begin(), forced.end());

  // Coverage is a rank prefix under a budget, so one dominant target larger than the budget makes
  // it select nothing at all — exactly when excluding that target matters most. Say so.
  if (!options.threshold && result.cut == 0 && !ranking.empty() && options.coverage > 0.0 &&
      ranking[0].score > options.min_score_floor) {
    double total = 0.0;
    for (const auto& e : ranking) total += e.score;
    result.warnings.push_back(fmt::format(
        "coverage={} selects nothing: the top target '{}' alone holds {:.1f}% of the total score; "
        "use --threshold, --max_nodes, or --coverage 1.0 with --max_nodes to exclude it",
        options.coverage, ranking[0].name, total > 0.0 ? 100.0 * ranking[0].score / total : 0.0));
  }

  // Near tie: the first entry left out scores almost as high as the last one taken, so the cut
  // separates two entries the scan cannot really tell apart. An entry at or below the floor can
  // never be taken, so it does not make a tie.
  if (options.near_tie_ratio && result.cut > 0 && result.cut < ranking.size()) {
    const RankedEntry& last = ranking[result.cut - 1];
    const RankedEntry& next = ranking[result.cut];
    if (next.score > options.min_score_floor &&
        next.score >= *options.near_tie_ratio * last.score) {
      const double ratio = last.score > 0.0 ? next.score / last.score : 1.0;
      result.warnings.push_back(fmt::format(
          "near tie at the exclusion cut ({}): '{}' (first not excluded, {:.6g}) scores {:.4f} of "
          "'{}' (last excluded, {:.6g}), at or above near_tie_ratio={}; widen the selection to "
          "take it, narrow it to drop both, or set near_tie_ratio to none to silence this",
          result.cut_rule, next.name, next.score, ratio, last.name, last.score,
          *options.near_tie_ratio));
    }
  }
  return result;
}

}  // namespace ptqkit
