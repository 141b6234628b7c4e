#include "report/sensitivity_html.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "base/html.h"
#include "sensitivity/rank_order.h"
#include "report/score_format.h"

namespace ptqkit::sensitivity {
namespace {

using html::Escape;
using html::KeyValueTable;
using html::Row;

// Long node paths keep their informative tail in the chart; the full name is in the tooltip.
std::string ShortLabel(const std::string& name, size_t max_bytes) {
  if (name.size() <= max_bytes) return name;
  size_t start = name.size() - (max_bytes - 3);
  while (start < name.size() && (static_cast<unsigned char>(name[start]) & 0xC0) == 0x80) ++start;
  return "\xE2\x80\xA6" + name.substr(start);  // U+2026 HORIZONTAL ELLIPSIS
}

struct Bar {
  std::string name;
  double score = 0.0;
  bool selected = false;
};

constexpr double kRowHeight = 18.0;
constexpr double kBarArea = 480.0;
constexpr double kCharWidth = 6.6;  // average glyph width of the 11px sans-serif labels
constexpr size_t kMaxLabelBytes = 64;

// A horizontal bar chart, one row per bar in the given order. `cut` >= 0 draws the cut line
// after that many rows, labelled `cut_label`.
std::string BarChart(const std::vector<Bar>& bars, long cut, const std::string& cut_label,
                     const std::string& caption) {
  size_t label_chars = 8;
  double max_score = 0.0;
  for (const auto& bar : bars) {
    label_chars = std::max(label_chars, ShortLabel(bar.name, kMaxLabelBytes).size());
    max_score = std::max(max_score, bar.score);
  }
  const double label_width =
      static_cast<double>(std::min<size_t>(label_chars, kMaxLabelBytes)) * kCharWidth + 12.0;
  const double value_width = 90.0;
  const double top = 8.0;
  const double width = label_width + kBarArea + value_width;
  const double height = top + kRowHeight * static_cast<double>(bars.size()) + 24.0;
  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" width=\"{:.0f}\" "
      "height=\"{:.0f}\" viewBox=\"0 0 {:.0f} {:.0f}\" role=\"img\" aria-label=\"{}\">\n",
      width, height, width, height, Escape(caption));
  for (size_t i = 0; i < bars.size(); ++i) {
    const Bar& bar = bars[i];
    const double y = top + kRowHeight * static_cast<double>(i);
    double bar_width = max_score > 0.0 ? bar.score / max_score * kBarArea : 0.0;
    if (bar.score > 0.0) bar_width = std::max(bar_width, 1.0);  // measured, however small
    out += fmt::format("<g class=\"{}\">", bar.selected ? "row excluded" : "row");
    out += fmt::format("<title>{} = {}{}</title>", Escape(bar.name),
                       fmt::format("{:.6g}", bar.score), bar.selected ? " (excluded)" : "");
    out +=
        fmt::format("<text class=\"label\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>",
                    label_width - 6.0, y + 13.0, Escape(ShortLabel(bar.name, kMaxLabelBytes)));
    out += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" class=\"{}\" />",
        label_width, y + 3.0, bar_width, kRowHeight - 5.0, bar.selected ? "bar cut" : "bar");
    out += fmt::format("<text class=\"value\" x=\"{:.1f}\" y=\"{:.1f}\">{}</text>",
                       label_width + bar_width + 4.0, y + 13.0, Escape(FormatScore(bar.score, 3)));
    out += "</g>\n";
  }
  if (cut >= 0 && !bars.empty()) {
    const double y = top + kRowHeight * static_cast<double>(cut) + 1.0;
    out += fmt::format(
        "<line class=\"cutline\" x1=\"0\" y1=\"{:.1f}\" x2=\"{:.0f}\" y2=\"{:.1f}\" />\n", y, width,
        y);
    out += fmt::format("<text class=\"cutlabel\" x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n",
                       label_width + kBarArea - 4.0, y - 3.0, Escape(cut_label));
  }
  return out + "</svg>\n";
}

constexpr const char* kChartStyle = R"(.chart .bar { fill: #5b8def; }
.chart .bar.cut { fill: #d9534f; }
.chart .value { fill: #555; }
.chart .cutline { stroke: #d9534f; stroke-width: 1.5; stroke-dasharray: 6 4; }
.chart .cutlabel { fill: #d9534f; text-anchor: end; font-weight: bold; }
code { font-size: 0.9em; }
)";

}  // namespace

namespace {

// The page's head, title and the run's settings.
std::string RunSection(const SensitivityResult& result, const std::map<std::string, std::string>& settings) {
  std::string out =
      "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n"
      "<meta charset=\"utf-8\" />\n";
  out += fmt::format("<title>ptqkit sensitivity: {}</title>\n", Escape(result.onnx_path));
  out += fmt::format("<style>\n{}{}</style>\n</head>\n<body>\n", html::kBaseStyle, kChartStyle);
  out += "<h1>Sensitivity scan</h1>\n";
  out += fmt::format("<p><code>{}</code></p>\n", Escape(result.onnx_path));
  if (result.calibration_source == "synthetic") {
    out +=
        "<p class=\"note\">Calibrated on synthetic data: the scores are directional only; do "
        "not pair them with absolute thresholds.</p>\n";
  }
  out += "<h2>Run</h2>\n";
  out += KeyValueTable({
      {"model", result.onnx_path},
      {"target precision", result.target_precision},
      {"metric", result.metric},
      {"granularity", result.granularity},
      {"calibration source", result.calibration_source},
      {"calibration samples", fmt::format("{}", result.num_calibration_samples)},
      {"targets scored", fmt::format("{}", result.scores.size())},
      {"targets failed", fmt::format("{}", result.failed.size())},
      {"ptqkit version", result.ptqkit_version},
  });
  if (!settings.empty()) {
    out += "<h2>Settings</h2>\n";
    out += KeyValueTable({settings.begin(), settings.end()});
  }
  return out;
}

// Per-target ranking. Without blocks the selection is a prefix of this order, so the cut is a
// line; with blocks the excluded members are scattered, so only their bars are highlighted.
std::string RankingSection(const SensitivityResult& result, const PickResult* pick) {
  std::set<std::string> excluded;
  if (pick != nullptr) excluded.insert(pick->excluded.begin(), pick->excluded.end());
  std::vector<Bar> bars;
  for (const auto& [name, score] : RankByScore(result.scores)) {
    bars.push_back({name, score, excluded.count(name) != 0});
  }
  long target_cut = -1;
  std::string cut_label;
  if (pick != nullptr && !pick->block_mode) {
    target_cut = static_cast<long>(pick->cut);
    cut_label = "exclusion cut (" + pick->cut_rule + ")";
  }
  std::string out = fmt::format("<h2>Ranking ({} / {} / {})</h2>\n", Escape(result.target_precision),
                                Escape(result.metric), Escape(result.granularity));
  if (bars.empty()) return out + "<p>No target was scored.</p>\n";
  out += fmt::format(
      "<p>{} target(s), highest impact first; bar length is the score relative to the "
      "highest{}.</p>\n",
      bars.size(), pick != nullptr ? "; red bars are excluded (kept in high precision)" : "");
  return out + BarChart(bars, target_cut, cut_label, fmt::format("Sensitivity ranking by {}", result.metric));
}

// --blocks: the ranking of groups and singletons the picker cut.
std::string BlockSection(const PickResult& pick) {
  std::string out = fmt::format("<h2>Block ranking (sorted by {}_agg)</h2>\n", Escape(pick.block_agg));
  std::vector<Bar> group_bars;
  std::string table = "<table>\n";
  table += Row({"#", "group", "kind", "max_agg", "sum_agg", "mean_agg", "members", "excluded"}, true);
  for (size_t i = 0; i < pick.ranking.size(); ++i) {
    const RankedEntry& e = pick.ranking[i];
    const std::string label = e.is_block ? e.name : e.name + " (node)";
    group_bars.push_back({label, e.score, i < pick.cut});
    table += Row({fmt::format("{}", i + 1), e.name, e.is_block ? "group" : "singleton", FormatScore(e.max_score, 3),
                  FormatScore(e.sum_score, 3), FormatScore(e.mean_score, 3), fmt::format("{}", e.members.size()),
                  i < pick.cut ? "yes" : "no"});
  }
  table += "</table>\n";
  if (!group_bars.empty()) {
    out += BarChart(group_bars, static_cast<long>(pick.cut), "exclusion cut (" + pick.cut_rule + ")",
                    fmt::format("Block ranking by {}_agg", pick.block_agg));
  }
  return out + table;
}

// What the picker excluded, and the mass it covers.
std::string ExclusionSection(const SensitivityResult& result, const PickResult& pick) {
  const ExclusionSummary summary = SummarizeExclusion(result.scores, pick.excluded);
  std::string out = fmt::format("<h2>Exclusion ({})</h2>\n", Escape(pick.cut_rule));
  out += KeyValueTable({
      {"coverage_pct", fmt::format("{:.2f}", summary.coverage_pct)},
      {"num_excluded", fmt::format("{}", summary.num_excluded)},
      {"num_previously_quantized", fmt::format("{}", summary.num_previously_quantized)},
      {"num_remaining_quantized", fmt::format("{}", summary.num_remaining_quantized)},
      {"excluded_mass", fmt::format("{:.6g}", summary.excluded_mass)},
      {"total_mass", fmt::format("{:.6g}", summary.total_mass)},
  });
  if (pick.excluded.empty()) return out + "<p>Nothing is excluded.</p>\n";
  out += "<ol class=\"excluded\">\n";
  for (const auto& name : pick.excluded) out += fmt::format("<li><code>{}</code></li>\n", Escape(name));
  return out + "</ol>\n";
}

// Failed targets, the picker's warnings and the timings.
std::string TailSections(const SensitivityResult& result, const PickResult* pick) {
  std::string out;
  if (!result.failed.empty()) {
    out += "<h2>Failed targets (not scored)</h2>\n<table>\n" + Row({"target", "reason"}, true);
    for (const auto& [target, reason] : result.failed) out += Row({target, reason});
    out += "</table>\n";
  }
  if (pick != nullptr && !pick->warnings.empty()) {
    out += "<h2>Warnings</h2>\n<ul>\n";
    for (const auto& warning : pick->warnings) out += "<li>" + Escape(warning) + "</li>\n";
    out += "</ul>\n";
  }
  if (!result.timings.empty()) {
    out += "<h2>Timings (seconds)</h2>\n";
    std::vector<std::pair<std::string, std::string>> rows;
    for (const auto& [phase, seconds] : result.timings) rows.emplace_back(phase, fmt::format("{:.3f}", seconds));
    out += KeyValueTable(rows);
  }
  return out;
}

}  // namespace

std::string RenderHtmlReport(const SensitivityResult& result, const PickResult* pick,
                             const std::map<std::string, std::string>& settings) {
  std::string out = RunSection(result, settings) + RankingSection(result, pick);
  if (pick != nullptr && pick->block_mode) out += BlockSection(*pick);
  if (pick != nullptr) out += ExclusionSection(result, *pick);
  return out + TailSections(result, pick) + "</body>\n</html>\n";
}

}  // namespace ptqkit::sensitivity
