#include <fmt/format.h>

#include <filesystem>
#include <memory>

#include "base/io_guard.h"
#include "base/log.h"
#include "cli/commands.h"
#include "cli/option_flags.h"
#include "scan/sensitivity_shard.h"
#include "ptqkit/calibration.h"
#include "ptqkit/error.h"
#include "ptqkit/sensitivity.h"
#include "report/ranking_text.h"
#include "report/scan_outputs.h"
#include "sensitivity/scores_file.h"
#include "scan/scan_options.h"
#include "scan/sensitivity_part.h"

namespace ptqkit::cli {
namespace {

std::string DefaultJsonPath(const std::string& model) {
  const std::filesystem::path p(model);
  return (p.parent_path() / (p.stem().string() + ".sensitivity.json")).string();
}

std::string DefaultPartPath(const std::string& model, const shard::ShardSpec& s) {
  const std::filesystem::path p(model);
  return (p.parent_path() / fmt::format("{}.sensitivity.part{}of{}.json", p.stem().string(), s.index, s.count)).string();
}

SensitivityResult MergeParts(const std::vector<std::string>& paths) {
  std::vector<shard::SensitivityPart> parts;
  for (const auto& p : paths) parts.push_back(shard::LoadSensitivityPart(p));
  return shard::MergeSensitivityParts(parts, paths);
}

}  // namespace

Command RegisterSensitivity(CLI::App& app) {
  auto* cmd = app.add_subcommand("sensitivity", "Rank op types or nodes by how much quantizing each alone changes the outputs");
  // The flags are the option table's: quantize's data, calibration, runtime and logging options
  // (same names, parsing and errors) and the scan's own (options/sensitivity_option_table.cc).
  auto settings = std::make_shared<options::QuantizeSettings>();
  AddOptionFlags(cmd, options::kSensitivity, settings);

  return [=]() {
    const options::ScanSettings& scan = settings->scan;
    const std::string& log_file = settings->log_file;
    log::SetLevel(log::ParseLevel(settings->log_level));
    SensitivityOptions o = scan.options;
    UseQuantizeCalibration(settings->options, o);
    const std::string& output_json = scan.output_json;
    const std::string& report = scan.report;
    const std::string& shard_text = scan.shard;
    const std::vector<std::string>& merge = scan.merge;
    // The scores (or part) file this run will write, for the check below. (A merge without
    // --output_json writes beside the model the parts name, which it does not read.)
    std::string guarded_json = output_json;
    if (guarded_json.empty() && !o.onnx_path.empty()) {
      guarded_json = shard_text.empty() ? DefaultJsonPath(o.onnx_path)
                                         : DefaultPartPath(o.onnx_path, shard::ParseShard(shard_text));
    }
    o.output_files = {{guarded_json, "--output_json"}, {report, "--report"}, {log_file, "--log_file"}};
    {
      IoGuard files;  // the log is opened first: check it before (the scan checks again with external data)
      files.Input(o.onnx_path, "--onnx_path");
      files.InputFolderFiles(o.calibration_data_path, "--calibration_data_path");
      files.Input(o.calibration_cache, "--calibration_cache");
      for (const auto& part : merge) files.Input(part, "--merge");
      for (const auto& [path, role] : o.output_files) files.Output(path, role);
      files.Check();
    }
    if (!log_file.empty()) log::SetFile(log_file);
    if (!merge.empty() && (!o.onnx_path.empty() || !shard_text.empty())) {
      throw Error("sensitivity --merge takes only part files (and --output_json, --report): the parts know their run");
    }
    if (merge.empty() && o.onnx_path.empty()) throw Error("sensitivity needs --onnx_path (or --merge parts...)");
    if (!shard_text.empty()) {
      const shard::ShardSpec spec = shard::ParseShard(shard_text);
      o.shard_index = spec.index;
      o.shard_count = spec.count;
      const std::string path = output_json.empty() ? DefaultPartPath(o.onnx_path, spec) : output_json;
      shard::SensitivityPart part;
      part = ScoreSensitivityShard(o);
      shard::SaveSensitivityPart(part, path);
      fmt::print("shard {}: {} of {} target(s): {} scored, {} failed\nWrote {}\n", shard_text, part.targets.size(),
                 part.num_targets, part.result.scores.size(), part.result.failed.size(), path);
      return 0;
    }
    sensitivity::SensitivityResult result;
    if (!merge.empty()) {
      result = MergeParts(merge);
    } else {
      result = ScoreSensitivity(o);
    }
    const std::string json_path = output_json.empty() ? DefaultJsonPath(result.onnx_path) : output_json;
    sensitivity::WriteScanOutputs(
        result, {json_path, report,
                 !merge.empty() ? "(merged parts)" : o.calibration_data_path.empty() ? "(synthetic)" : o.calibration_data_path,
                 !merge.empty() ? "(merged parts)" : o.calibration_method});
    if (result.calibration_source == "synthetic") {
      log::Warn("scores come from synthetic inputs: they are directional only; do not pair them with absolute thresholds");
    }
    fmt::print("{}", sensitivity::RenderRanking(result, scan.show_zero_scores));
    for (const auto& [target, reason] : result.non_finite) fmt::print("  non-finite: {}: {}\n", target, reason);
    for (const auto& [target, reason] : result.failed) fmt::print("  failed: {}: {}\n", target, reason);
    fmt::print("Wrote {}\n", json_path);
    if (!report.empty()) fmt::print("Wrote {}\n", report);
    return 0;
  };
}

}  // namespace ptqkit::cli
