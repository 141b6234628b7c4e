// `ptqkit exclude`: the picker on a scores file written by `ptqkit sensitivity`.
// stdout carries only the exclusion list in the chosen format, so it can be piped or substituted:
//   ptqkit quantize --onnx_path m.onnx $(ptqkit exclude --scores m.sensitivity.json --format cli)
// Everything for people (block ranking, summary, warnings, "Wrote <report>") goes to stderr.
#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/atomic_file.h"
#include "base/io_guard.h"
#include "base/json_file.h"
#include "base/log.h"
#include "cli/commands.h"
#include "options/picker_option_table.h"
#include "ptqkit/error.h"
#include "ptqkit/picker.h"
#include "sensitivity/blocks_file.h"
#include "report/picker_output.h"
#include "report/sensitivity_html.h"
#include "sensitivity/scores_file.h"

namespace ptqkit::cli {
namespace {

struct ExcludeArgs {
  std::string scores_path;
  std::map<std::string, std::string> picker;  // the picker options given, as text (options/picker_option_table.h)
  std::string blocks_path;
  std::string format = "list";
  std::string report_path;
  std::string log_level = "INFO";
};

std::map<std::string, std::string> ReportSettings(const ExcludeArgs& a, const PickerOptions& o) {
  std::map<std::string, std::string> s;
  s["scores"] = a.scores_path;
  if (o.threshold) {
    s["threshold"] = fmt::format("{}", *o.threshold);
  } else {
    s["coverage"] = fmt::format("{}", o.coverage);
  }
  if (o.max_nodes) s["max_nodes"] = fmt::format("{}", *o.max_nodes);
  s["min_score_floor"] = fmt::format("{}", o.min_score_floor);
  s["near_tie_ratio"] = o.near_tie_ratio ? fmt::format("{}", *o.near_tie_ratio) : "none";
  if (!a.blocks_path.empty()) {
    s["blocks"] = a.blocks_path;
    s["block_agg"] = o.block_agg;
  }
  return s;
}

int RunExclude(const ExcludeArgs& a) {
  log::SetLevel(log::ParseLevel(a.log_level));
  IoGuard files;
  files.Input(a.scores_path, "--scores");
  files.Input(a.blocks_path, "--blocks");
  files.Output(a.report_path, "--report");
  files.Check();
  const sensitivity::SensitivityResult result = sensitivity::ReadResult(a.scores_path);
  PickerOptions options = options::ApplyPickerOptions(a.picker);
  if (!a.blocks_path.empty()) options.blocks = sensitivity::ReadBlocksFile(a.blocks_path);

  const PickResult pick = SuggestExclusion(result.scores, options);
  const ExclusionSummary summary = SummarizeExclusion(result.scores, pick.excluded);
  // Both checks see the same scores; a warning they share (e.g. negative scores) is said once.
  std::set<std::string> said;
  for (const auto* list : {&pick.warnings, &summary.warnings}) {
    for (const auto& warning : *list) {
      if (said.insert(warning).second) log::Warn("{}", warning);
    }
  }
  if (result.calibration_source == "synthetic" && options.threshold) {
    log::Warn(
        "'{}' was scored on synthetic data: its scores are directional only, and an absolute "
        "--threshold on them means little (prefer --coverage)",
        a.scores_path);
  }

  if (a.format == "list") {
    for (const auto& name : pick.excluded) fmt::print("{}\n", name);
  } else if (a.format == "cli") {
    // `$(ptqkit exclude --format cli)` splits on whitespace and expands globs but removes no
    // quotes: a name that needed quoting would arrive with its quotes, select nothing and stay
    // quantized. Refuse, and point at the format that carries any name.
    for (const auto& name : pick.excluded) {
      // A leading '@' would be read as a response file, a leading '-' as an option.
      if (sensitivity::ShellQuote(name) != name || name.front() == '@' || name.front() == '-') {
        throw Error(fmt::format("--format cli: name '{}' holds characters that do not survive $(...) on a command "
                                "line; write a response file with --format args > f.args and pass @f.args to "
                                "ptqkit quantize",
                                name));
      }
    }
    const std::string args = sensitivity::RenderExcludeArgs(pick.excluded, result.granularity);
    if (!args.empty()) fmt::print("{}\n", args);
  } else if (a.format == "args") {
    // A response file for `ptqkit quantize @file`: one argument a line, "--option=name", so any
    // name (spaces, quotes, brackets, a leading '-') comes back unchanged.
    const std::string option = result.granularity == "op_type" ? "--op_types_to_exclude" : "--nodes_to_exclude";
    for (const auto& name : pick.excluded) {
      if (name.find('\n') != std::string::npos || name.find('\r') != std::string::npos) {
        throw Error(fmt::format("--format args: name '{}' holds a line break; use --format json", name));
      }
      fmt::print("{}={}\n", option, name);
    }
  } else {
    fmt::print("{}\n", sensitivity::ExclusionJson(pick, summary, result.granularity).dump(2));
  }
  std::fflush(stdout);

  std::string human;
  if (pick.block_mode) human += sensitivity::RenderBlockRanking(pick, result.metric) + "\n";
  human += sensitivity::RenderSummary(summary, &pick);
  std::fputs(human.c_str(), stderr);

  if (!a.report_path.empty()) {
    WriteFileAtomically(a.report_path, sensitivity::RenderHtmlReport(result, &pick, ReportSettings(a, options)));
    std::fprintf(stderr, "Wrote %s\n", a.report_path.c_str());
  }
  return 0;
}

}  // namespace

Command RegisterExclude(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "exclude",
      "Pick the targets to keep in high precision from a sensitivity scan's scores (the list goes "
      "to stdout, the summary to stderr)");
  auto a = std::make_shared<ExcludeArgs>();
  cmd->add_option("--scores", a->scores_path, "Scores file written by `ptqkit sensitivity`")
      ->required();
  // The picker's options, from its table; a value is stored as text and applied in RunExclude.
  const PickerOptions defaults;
  std::map<std::string, CLI::Option*> added;
  for (const options::PickerOptionSpec& spec : options::PickerOptionTable()) {
    CLI::Option* option = cmd->add_option_function<std::string>(
        "--" + spec.name, [a, name = spec.name](const std::string& v) { a->picker[name] = v; }, spec.help);
    option->type_name(spec.metavar)->default_str(spec.show(defaults));
    if (!spec.choices.empty()) option->check(CLI::IsMember(spec.choices));
    added[spec.name] = option;
  }
  for (const options::PickerOptionSpec& spec : options::PickerOptionTable()) {
    if (!spec.excludes.empty()) added.at(spec.name)->excludes(added.at(spec.excludes));
  }
  cmd->add_option(
      "--blocks", a->blocks_path,
      "JSON object {group: [regex, ...]}: rank and exclude whole groups (first match wins)");
  cmd->add_option(
         "--format", a->format,
         "list (one name a line, for --nodes_to_exclude_file) | cli (--nodes_to_exclude/--op_types_to_exclude "
         "..., for $(...)) | args (a response file for @FILE: any name) | json")
      ->check(CLI::IsMember({"list", "cli", "args", "json"}))
      ->capture_default_str();
  cmd->add_option("--report", a->report_path, "Also write an HTML report here");
  cmd->add_option("--log_level", a->log_level, "DEBUG | INFO | WARNING | ERROR")
      ->capture_default_str();
  return [a]() { return RunExclude(*a); };
}

}  // namespace ptqkit::cli
