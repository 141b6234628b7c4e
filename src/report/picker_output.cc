#include "report/picker_output.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "ptqkit/error.h"
#include "report/score_format.h"

namespace ptqkit::sensitivity {
namespace {

struct Column {
  std::string header;
  std::vector<std::string> cells;  // aligned, equal length
  size_t width = 0;
};

Column MakeColumn(std::string header, const std::vector<RankedEntry>& ranking,
                  double RankedEntry::*field, int decimals) {
  Column column{std::move(header), {}, 0};
  for (const auto& entry : ranking) column.cells.push_back(FormatScore(entry.*field, decimals));
  column.cells = AlignColumn(column.cells);
  column.width = column.header.size();
  for (const auto& cell : column.cells) column.width = std::max(column.width, cell.size());
  return column;
}

}  // namespace

std::string RenderBlockRanking(const PickResult& pick, const std::string& metric) {
  const std::vector<RankedEntry>& ranking = pick.ranking;
  std::string out = fmt::format("Block ranking ({}, sorted by {}_agg):\n", metric, pick.block_agg);
  std::set<std::string> group_names;
  for (const auto& entry : ranking) {
    if (entry.is_block) group_names.insert(entry.name);
  }
  std::vector<std::string> names;
  size_t name_width = std::string("Group").size();
  for (const auto& entry : ranking) {
    names.push_back(!entry.is_block && group_names.count(entry.name) ? entry.name + " (node)"
                                                                     : entry.name);
    name_width = std::max(name_width, names.back().size());
  }
  std::vector<Column> columns;
  columns.push_back(MakeColumn("max_agg", ranking, &RankedEntry::max_score, 3));
  columns.push_back(MakeColumn("sum_agg", ranking, &RankedEntry::sum_score, 2));
  if (pick.block_agg == "mean") {
    columns.push_back(MakeColumn("mean_agg", ranking, &RankedEntry::mean_score, 3));
  }
  std::string header = fmt::format("  {:<{}}", "Group", name_width + 2);
  for (size_t c = 0; c < columns.size(); ++c) {
    header += fmt::format("{}{:>{}}", c ? "   " : "", columns[c].header, columns[c].width);
  }
  out += header + "\n";
  for (size_t i = 0; i < ranking.size(); ++i) {
    std::string line = fmt::format("  {:<{}}", names[i], name_width + 2);
    for (size_t c = 0; c < columns.size(); ++c) {
      line += fmt::format("{}{:>{}}", c ? "   " : "", columns[c].cells[i], columns[c].width);
    }
    std::vector<std::string> markers;
    if (i == 0) markers.push_back("highest impact");
    if (i + 1 == pick.cut) markers.push_back("last included at " + pick.cut_rule);
    if (i + 1 == ranking.size() && i != 0) markers.push_back("lowest impact");
    if (!markers.empty()) line += "   <-- " + fmt::format("{}", fmt::join(markers, "; "));
    out += line + "\n";
  }
  if (ranking.empty()) out += "  (no scored targets)\n";
  if (pick.cut == 0) out += fmt::format("  (no group selected at {})\n", pick.cut_rule);
  return TrimLineEnds(out);
}

std::string RenderSummary(const ExclusionSummary& summary, const PickResult* pick) {
  std::vector<std::pair<std::string, std::string>> rows = {
      {"coverage_pct", fmt::format("{:.2f}", summary.coverage_pct)},
      {"num_excluded", fmt::format("{}", summary.num_excluded)},
      {"num_previously_quantized", fmt::format("{}", summary.num_previously_quantized)},
      {"num_remaining_quantized", fmt::format("{}", summary.num_remaining_quantized)},
      {"excluded_mass", FormatScore(summary.excluded_mass, 3)},
      {"total_mass", FormatScore(summary.total_mass, 3)},
  };
  // Shown only when there are some, so the reference document's summary layout is unchanged.
  if (summary.num_non_finite > 0) {
    rows.insert(rows.begin() + 4, {"num_non_finite", fmt::format("{}", summary.num_non_finite)});
  }
  std::vector<std::string> values;
  size_t label_width = 0;
  for (const auto& [label, value] : rows) {
    values.push_back(value);
    label_width = std::max(label_width, label.size());
  }
  values = AlignColumn(values);
  std::string out = "summarize_exclusion:\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    std::string line = fmt::format("  {:<{}}{}", rows[i].first, label_width + 1, values[i]);
    if (rows[i].first == "num_excluded" && pick != nullptr && pick->block_mode) {
      size_t groups = 0, singletons = 0;
      for (size_t e = 0; e < pick->cut && e < pick->ranking.size(); ++e) {
        (pick->ranking[e].is_block ? groups : singletons) += 1;
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      line += fmt::format(" ({} block group(s) + {} singleton(s))", groups, singletons);
    }
    out += line + "\n";
  }
  return TrimLineEnds(out);
}

std::string ShellQuote(const std::string& word) {
  const bool bare = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           std::string_view("_./:=@%+,-").find(c) != std::string_view::npos;
  });
  if (bare) return word;
  std::string quoted = "'";
  for (char c : word) {
    if (c == '\'') {
      quoted += "'\\''";  // close, escaped quote, reopen
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

std::string RenderExcludeArgs(const std::vector<std::string>& excluded,
                              const std::string& granularity) {
  std::string option;
  if (granularity == "node") {
    option = "--nodes_to_exclude";
  } else if (granularity == "op_type") {
    option = "--op_types_to_exclude";
  } else {
    throw Error(
        fmt::format("cannot write exclusion arguments for granularity '{}' (expected "
                    "\"node\" or \"op_type\")",
                    granularity));
  }
  if (excluded.empty()) return "";
  std::string out = option;
  for (const auto& name : excluded) {
    // Two appends, not `" " + ShellQuote(name)`: GCC 12 at -O3 reports a false -Wrestrict on
    // operator+(const char*, std::string&&) (GCC bug 105329), which broke Release builds.
    out += ' ';
    out += ShellQuote(name);
  }
  return out;
}

nlohmann::json PickJson(const PickResult& pick) {
  nlohmann::json ranking = nlohmann::json::array();
  for (size_t i = 0; i < pick.ranking.size(); ++i) {
    const RankedEntry& e = pick.ranking[i];
    ranking.push_back({{"name", e.name},
                       {"is_block", e.is_block},
                       {"score", e.score},
                       {"max", e.max_score},
                       {"sum", e.sum_score},
                       {"mean", e.mean_score},
                       {"members", e.members},
                       {"selected", i < pick.cut}});
  }
  return {{"excluded", pick.excluded},
          {"cut_rule", pick.cut_rule},
          {"block_agg", pick.block_mode ? nlohmann::json(pick.block_agg) : nlohmann::json()},
          {"ranking", std::move(ranking)},
          {"warnings", pick.warnings}};
}

nlohmann::json SummaryJson(const ExclusionSummary& summary) {
  return {{"coverage_pct", summary.coverage_pct},
          {"num_excluded", summary.num_excluded},
          {"num_previously_quantized", summary.num_previously_quantized},
          {"num_remaining_quantized", summary.num_remaining_quantized},
          {"num_non_finite", summary.num_non_finite},
          {"excluded_mass", summary.excluded_mass},
          {"total_mass", summary.total_mass}};
}

nlohmann::json ExclusionJson(const PickResult& pick, const ExclusionSummary& summary,
                             const std::string& granularity) {
  nlohmann::json out = PickJson(pick);
  out["granularity"] = granularity;
  out["summary"] = SummaryJson(summary);
  for (const auto& warning : summary.warnings) out["warnings"].push_back(warning);
  return out;
}

}  // namespace ptqkit::sensitivity
