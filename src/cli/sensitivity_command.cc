#include <fmt/format.h>

#include <filesystem>
#include <memory>

#include "base/io_guard.h"
#include "base/log.h"
#include "cli/commands.h"
#include "cli/number_checks.h"
#include "cli/progress_bar.h"
#include "scan/sensitivity_shard.h"
#include "ptqkit/calibration.h"
#include "ptqkit/error.h"
#include "ptqkit/sensitivity.h"
#include "sensitivity/ranking_text.h"
#include "sensitivity/scan_outputs.h"
#include "sensitivity/scores_file.h"
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
  auto o = std::make_shared<SensitivityOptions>();
  auto data_path = std::make_shared<std::string>();
  auto shapes = std::make_shared<std::string>();
  auto output_json = std::make_shared<std::string>();
  auto report = std::make_shared<std::string>();
  auto show_zero = std::make_shared<bool>(false);
  auto log_level = std::make_shared<std::string>("INFO");
  auto log_file = std::make_shared<std::string>();

  auto shard_text = std::make_shared<std::string>();
  auto merge = std::make_shared<std::vector<std::string>>();
  cmd->add_option("--onnx_path", o->onnx_path, "FP32 ONNX model (never modified); required unless --merge");
  cmd->add_option("--calibration_data_path", *data_path, ".npy / .npz / folder; none = synthetic (directional only)");
  cmd->add_option("--granularity", o->granularity, "op_type | node")->capture_default_str();
  cmd->add_option("--metric", o->metric, "kl_div | mse | cos")->capture_default_str();
  cmd->add_option("--target_precision", o->target_precision, "int8 | fp8")->capture_default_str();
  cmd->add_option("--calibration_method", o->calibration_method, "max | entropy | percentile | mse")->capture_default_str();
  cmd->add_option("--percentile", o->percentile, "Percentile for --calibration_method percentile")
      ->capture_default_str();
  cmd->add_option("--op_types_scope", o->op_types_scope, "Probe only these op types");
  cmd->add_option("--num_calib_samples", o->num_calib_samples, "Synthetic samples (only without data)")
      ->check(Count(1, 18))
      ->capture_default_str();
  auto batch_axis = std::make_shared<std::vector<std::string>>();
  cmd->add_option("--calibration_shapes", *shapes, "Calibration shapes, e.g. input:8x3x224x224");
  cmd->add_option("--calibration_batch_axis", *batch_axis,
                  "Axis the samples of an input lie along, e.g. state:1 (repeatable or comma list; default: "
                  "inferred when the input has exactly one dynamic dim, else 0; scalars are fed whole)");
  cmd->add_option("--calibration_batch_size", o->calibration_batch_size, "Batch size for dynamic-batch models (default 1)")
      ->check(Count(1, 12));
  cmd->add_option("--calibration_eps", o->calibration_eps, "Execution providers in order: cpu, cuda:N, trt")->capture_default_str();
  cmd->add_option("--trt_plugins", o->trt_plugins, "TensorRT plugin libraries for the trt provider");
  cmd->add_option("--activation_cache_limit_mb", o->activation_cache_limit_mb,
                  "FP32 activations cached for probe sub-graphs (MiB); above it probes run the whole model; 0 = always")
      ->capture_default_str();
  cmd->add_option("--intra_op_num_threads", o->intra_op_num_threads, "ONNX Runtime threads (0 = its default)")
      ->check(Count(0, 6));
  cmd->add_option("--calibration_cache", o->calibration_cache,
                  "Take the ranges from this calibration table (ptqkit calibrate) instead of calibrating");
  cmd->add_option("--shard", *shard_text,
                  "K/N: score only targets K, K+N, K+2N, ... (K from 0) and write a part file for --merge");
  cmd->add_option("--merge", *merge, "Merge these part files (every shard of one scan, any order) into the scores file")
      ->expected(1, -1);
  cmd->add_option("--output_json", *output_json, "Scores file (default: <model>.sensitivity.json beside the model)");
  cmd->add_option("--report", *report, "Also write a self-contained HTML report here");
  cmd->add_flag("--show_zero_scores", *show_zero, "List targets whose score is 0 too");
  cmd->add_option("--log_level", *log_level, "DEBUG | INFO | WARNING | ERROR")->capture_default_str();
  cmd->add_option("--log_file", *log_file, "Also write log messages to this file");

  return [=]() {
    log::SetLevel(log::ParseLevel(*log_level));
    o->calibration_data_path = *data_path;
    // The scores (or part) file this run will write, for the check below. (A merge without
    // --output_json writes beside the model the parts name, which it does not read.)
    std::string guarded_json = *output_json;
    if (guarded_json.empty() && !o->onnx_path.empty()) {
      guarded_json = shard_text->empty() ? DefaultJsonPath(o->onnx_path)
                                         : DefaultPartPath(o->onnx_path, shard::ParseShard(*shard_text));
    }
    o->output_files = {{guarded_json, "--output_json"}, {*report, "--report"}, {*log_file, "--log_file"}};
    {
      IoGuard files;  // the log is opened first: check it before (the scan checks again with external data)
      files.Input(o->onnx_path, "--onnx_path");
      files.InputFolderFiles(o->calibration_data_path, "--calibration_data_path");
      files.Input(o->calibration_cache, "--calibration_cache");
      for (const auto& part : *merge) files.Input(part, "--merge");
      for (const auto& [path, role] : o->output_files) files.Output(path, role);
      files.Check();
    }
    if (!log_file->empty()) log::SetFile(*log_file);
    if (!shapes->empty()) o->calibration_shapes = ParseShapeList(*shapes);
    std::string axes_text;
    for (const std::string& entry : *batch_axis) axes_text += entry + ",";
    o->calibration_batch_axis = ParseBatchAxisList(axes_text);
    if (!merge->empty() && (!o->onnx_path.empty() || !shard_text->empty())) {
      throw Error("sensitivity --merge takes only part files (and --output_json, --report): the parts know their run");
    }
    if (merge->empty() && o->onnx_path.empty()) throw Error("sensitivity needs --onnx_path (or --merge parts...)");
    if (!shard_text->empty()) {
      const shard::ShardSpec spec = shard::ParseShard(*shard_text);
      o->shard_index = spec.index;
      o->shard_count = spec.count;
      const std::string path = output_json->empty() ? DefaultPartPath(o->onnx_path, spec) : *output_json;
      shard::SensitivityPart part;
      {
        ProgressBar bar("probing");
        o->progress = [&bar](int64_t done, int64_t total) { bar.Update(done, total); };
        part = ScoreSensitivityShard(*o);
        o->progress = nullptr;
      }
      shard::SaveSensitivityPart(part, path);
      fmt::print("shard {}: {} of {} target(s): {} scored, {} failed\nWrote {}\n", *shard_text, part.targets.size(),
                 part.num_targets, part.result.scores.size(), part.result.failed.size(), path);
      return 0;
    }
    sensitivity::SensitivityResult result;
    if (!merge->empty()) {
      result = MergeParts(*merge);
    } else {
      ProgressBar bar("probing");
      o->progress = [&bar](int64_t done, int64_t total) { bar.Update(done, total); };
      result = ScoreSensitivity(*o);
      o->progress = nullptr;
    }
    const std::string json_path = output_json->empty() ? DefaultJsonPath(result.onnx_path) : *output_json;
    sensitivity::WriteScanOutputs(
        result, {json_path, *report,
                 !merge->empty() ? "(merged parts)" : data_path->empty() ? "(synthetic)" : *data_path,
                 !merge->empty() ? "(merged parts)" : o->calibration_method});
    if (result.calibration_source == "synthetic") {
      log::Warn("scores come from synthetic inputs: they are directional only; do not pair them with absolute thresholds");
    }
    fmt::print("{}", sensitivity::RenderRanking(result, *show_zero));
    for (const auto& [target, reason] : result.non_finite) fmt::print("  non-finite: {}: {}\n", target, reason);
    for (const auto& [target, reason] : result.failed) fmt::print("  failed: {}: {}\n", target, reason);
    fmt::print("Wrote {}\n", json_path);
    if (!report->empty()) fmt::print("Wrote {}\n", *report);
    return 0;
  };
}

}  // namespace ptqkit::cli
