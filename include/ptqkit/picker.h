// The exclusion picker: turns the scores of a sensitivity scan ({target: score}, higher = more
// sensitive) into the list of targets to keep in high precision (ModelOpt's suggest_exclusion and
// summarize_exclusion), so the list can be passed to Quantize() as nodes_to_exclude (node
// granularity) or op_types_to_exclude (op_type granularity).
//
// Ranking: score descending, ties by name ascending. The selection is always a prefix of the
// ranking (the "cut"), decided by the first of these limits to bind:
//   - coverage mode (default): walk the ranking adding scores; stop at the first entry that would
//     push the running sum above coverage x total. Sums are compared with a relative tolerance of
//     1e-9 of the total, so coverage = 1.0 takes every positive entry despite rounding.
//   - threshold mode (threshold set; coverage is then ignored): every entry scoring strictly above
//     the threshold.
//   - min_score_floor: an entry scoring <= the floor is never excluded (by default zeros never
//   are).
//   - max_nodes: at most this many entries (groups, in block mode).
// Blocks: `blocks` is an ordered list of (group name, regexes). Each scored target joins the first
// group with a regex that matches somewhere in its name (RE2 syntax, linear time; anchor with ^
// yourself). Unmatched targets become singleton groups named after the target; a singleton whose
// name equals a group's name stays a separate entry. Groups are scored by block_agg (sum | max |
// mean of their members) and ranked like targets; the result is the union of the selected groups'
// members.
// Scores: NaN or infinite scores are an error naming the target; negative scores are clamped to 0
// with a warning (the metrics are non-negative; a negative value is an upstream defect).
// Warnings are returned, not logged, so each front end reports them its own way.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ptqkit {

struct PickerOptions {
  double coverage = 0.90;                       // REQUIRES: 0 <= coverage <= 1
  std::optional<double> threshold;              // REQUIRES: >= 0; overrides coverage when set
  std::optional<int> max_nodes;                 // REQUIRES: >= 0; counts groups in block mode
  double min_score_floor = 0.0;                 // REQUIRES: finite
  std::optional<double> near_tie_ratio = 0.99;  // REQUIRES: 0 < ratio <= 1; nullopt = no warning
  // Ordered (group name, regexes). Empty = per-target ranking. REQUIRES: unique group names,
  // valid regexes.
  std::vector<std::pair<std::string, std::vector<std::string>>> blocks;
  std::string block_agg = "sum";  // sum | max | mean
};

// One entry of the ranking: a target, or in block mode a group (or a singleton group).
struct RankedEntry {
  std::string name;
  bool is_block = false;  // a group formed by the blocks option (false: a target or singleton)
  double score = 0.0;     // what the ranking used: the target's score, or block_agg of members
  double max_score = 0.0;
  double sum_score = 0.0;
  double mean_score = 0.0;
  std::vector<std::string> members;  // targets, in rank order; {name} for a target or singleton
};

struct PickResult {
  std::vector<std::string> excluded;  // targets to keep in high precision, in rank order
  std::vector<RankedEntry> ranking;   // every entry, in rank order
  size_t cut = 0;                     // ranking[0, cut) were selected
  // The limit that set the cut, as "coverage=0.9", "threshold=0.1", "max_nodes=6" or
  // "min_score_floor=0".
  std::string cut_rule;
  bool block_mode = false;
  std::string block_agg;  // as given (block mode only)
  std::vector<std::string> warnings;
};

// Throws ptqkit::Error for invalid options (naming the option and the expected range), invalid
// regexes (naming the group and the pattern) and non-finite scores (naming the target).
PickResult SuggestExclusion(const std::map<std::string, double>& scores,
                            const PickerOptions& options);

struct ExclusionSummary {
  double coverage_pct = 0.0;             // excluded_mass / total_mass x 100; 0 when total_mass is 0
  int64_t num_excluded = 0;              // distinct scored targets in `excluded`
  int64_t num_previously_quantized = 0;  // scored targets
  int64_t num_remaining_quantized = 0;   // scored targets not excluded
  int64_t num_non_finite = 0;            // targets whose probe made outputs NaN/Inf (not in the mass)
  double excluded_mass = 0.0;
  double total_mass = 0.0;
  std::vector<std::string> warnings;  // names not in scores, and names given twice
};

// Names in `excluded` that are not scored, or repeat an earlier name, are not counted (and are
// reported in warnings). Scores are treated as in SuggestExclusion (negative -> 0, not finite ->
// error).
ExclusionSummary SummarizeExclusion(const std::map<std::string, double>& scores,
                                    const std::vector<std::string>& excluded);

}  // namespace ptqkit
