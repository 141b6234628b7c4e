#include "options/picker_option_table.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "options/option_spec.h"
#include "ptqkit/error.h"

namespace ptqkit::options {
namespace {

std::string Number(double v) { return fmt::format("{}", v); }

// An optional number: "none" clears it.
template <typename T>
std::string Optional(const std::optional<T>& v) {
  return v ? fmt::format("{}", *v) : "none";
}

std::vector<PickerOptionSpec> BuildTable() {
  std::vector<PickerOptionSpec> t;
  t.push_back({.name = "coverage",
               .metavar = "C",
               .help = "Exclude the top of the ranking while its cumulative score stays <= this share of the total",
               .excludes = "threshold",
               .apply = [](PickerOptions& o, const std::string& v) { o.coverage = ParseReal("--coverage", v); },
               .show = [](const PickerOptions& o) { return Number(o.coverage); }});
  t.push_back({.name = "threshold",
               .metavar = "T",
               .help = "Exclude every target scoring above this (instead of --coverage)",
               .excludes = "coverage",
               .apply =
                   [](PickerOptions& o, const std::string& v) {
                     o.threshold = v == "none" ? std::nullopt : std::optional(ParseReal("--threshold", v));
                   },
               .show = [](const PickerOptions& o) { return Optional(o.threshold); }});
  t.push_back({.name = "max_nodes",
               .metavar = "N",
               .help = "Exclude at most this many targets (groups with --blocks)",
               .apply =
                   [](PickerOptions& o, const std::string& v) {
                     o.max_nodes = v == "none" ? std::nullopt
                                               : std::optional(static_cast<int>(ParseCount("--max_nodes", v, 0, 9)));
                   },
               .show = [](const PickerOptions& o) { return Optional(o.max_nodes); }});
  t.push_back({.name = "min_score_floor",
               .metavar = "X",
               .help = "Never exclude a target scoring <= this",
               .apply = [](PickerOptions& o,
                           const std::string& v) { o.min_score_floor = ParseReal("--min_score_floor", v); },
               .show = [](const PickerOptions& o) { return Number(o.min_score_floor); }});
  t.push_back({.name = "near_tie_ratio",
               .metavar = "R",
               .help = "Warn when the first target left in scores >= this ratio of the last excluded ('none' "
                       "silences)",
               .apply =
                   [](PickerOptions& o, const std::string& v) {
                     if (v == "none") {
                       o.near_tie_ratio = std::nullopt;
                       return;
                     }
                     try {
                       o.near_tie_ratio = ParseReal("--near_tie_ratio", v);
                     } catch (const Error&) {
                       throw Error(fmt::format(
                           "--near_tie_ratio: expected a number in (0, 1] or 'none', got '{}'", v));
                     }
                   },
               .show = [](const PickerOptions& o) { return Optional(o.near_tie_ratio); }});
  t.push_back({.name = "block_agg",
               .metavar = "A",
               .help = "Group score with --blocks: sum | max | mean",
               .choices = {"sum", "max", "mean"},
               .apply = [](PickerOptions& o, const std::string& v) { o.block_agg = v; },
               .show = [](const PickerOptions& o) { return o.block_agg; }});
  return t;
}

}  // namespace

const std::vector<PickerOptionSpec>& PickerOptionTable() {
  static const std::vector<PickerOptionSpec> kTable = BuildTable();
  return kTable;
}

PickerOptions ApplyPickerOptions(const std::map<std::string, std::string>& given, PickerOptions options) {
  for (const auto& [name, value] : given) {
    const auto& table = PickerOptionTable();
    const bool known = std::any_of(table.begin(), table.end(), [&](const PickerOptionSpec& s) { return s.name == name; });
    if (!known) throw Error(fmt::format("unknown picker option '{}'", name));
  }
  for (const PickerOptionSpec& spec : PickerOptionTable()) {
    auto it = given.find(spec.name);
    if (it == given.end()) continue;
    if (!spec.choices.empty() && std::find(spec.choices.begin(), spec.choices.end(), it->second) == spec.choices.end()) {
      throw Error(fmt::format("--{}: expected {}, got '{}'", spec.name, fmt::join(spec.choices, " | "), it->second));
    }
    spec.apply(options, it->second);
  }
  return options;
}

}  // namespace ptqkit::options
