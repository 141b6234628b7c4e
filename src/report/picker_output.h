// What `ptqkit exclude` prints: the exclusion list in three shapes (one name a line, arguments
// ready for `ptqkit quantize`, JSON), the block ranking table and the summarize_exclusion block,
// in the reference's shapes:
//
//   Block ranking (kl_div, sorted by max_agg):
//     Group                     max_agg   sum_agg
//     blocks.8                    6.737     24.97   <-- highest impact
//     blocks.7                    0.857      1.85   <-- last included at threshold=0.1
//     /head/Gemm                  0          0      <-- lowest impact
//
//   summarize_exclusion:
//     coverage_pct              99.86
//     num_excluded             101 (5 block group(s) + 1 singleton(s))
//     num_previously_quantized 244
//     num_remaining_quantized  143
//     excluded_mass              ...
//     total_mass                 ...
//
// Numbers use FormatScore (score_format.h): max and mean 3 decimals, sum 2, decimal-aligned.
// A singleton whose name equals a group's shows as "<name> (node)".
// Pure functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ptqkit/picker.h"

namespace ptqkit::sensitivity {

// The table of pick.ranking; mean_agg is added as a third column when block_agg is mean.
// Every line ends with '\n'. REQUIRES: pick.block_mode.
std::string RenderBlockRanking(const PickResult& pick, const std::string& metric);

// `pick` (may be null) adds the group/singleton split of num_excluded in block mode.
std::string RenderSummary(const ExclusionSummary& summary, const PickResult* pick);

// POSIX shell quoting: names made only of [A-Za-z0-9_./:=@%+,-] (every ONNX exporter's usual
// alphabet) are left bare, so `$(ptqkit exclude --format cli ...)` works; anything else is put in
// single quotes, ready for copy-paste or eval.
std::string ShellQuote(const std::string& word);

// "--nodes_to_exclude a b" (granularity node) or "--op_types_to_exclude A B" (op_type); empty
// when nothing is excluded (an option without values would be a usage error). Throws
// ptqkit::Error for another granularity.
std::string RenderExcludeArgs(const std::vector<std::string>& excluded,
                              const std::string& granularity);

// The picker's result: {"excluded": [...], "cut_rule": ..., "block_agg": ... (null without blocks),
// "ranking": [...], "warnings": [...]}; ranking entries carry name, is_block, score, max/sum/mean,
// members and selected. Python's suggest_exclusion() reads this document.
nlohmann::json PickJson(const PickResult& pick);
// What an exclusion covers: coverage_pct, num_excluded, num_previously_quantized,
// num_remaining_quantized, num_non_finite, excluded_mass, total_mass (the warnings are the caller's).
nlohmann::json SummaryJson(const ExclusionSummary& summary);

// PickJson with the granularity, SummaryJson under "summary" and both warning lists: `ptqkit
// exclude --format json`.
// {"excluded": [...], "cut_rule": ..., "granularity": ..., "summary": {...}, "ranking": [...],
//  "warnings": [...]}; ranking entries carry name, is_block, score, max/sum/mean, members and
// selected.
nlohmann::json ExclusionJson(const PickResult& pick, const ExclusionSummary& summary,
                             const std::string& granularity);

}  // namespace ptqkit::sensitivity
