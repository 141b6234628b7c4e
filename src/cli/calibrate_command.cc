// `ptqkit calibrate`: the calibration pass alone, so it can be split over machines.
//
//   ptqkit calibrate --onnx_path M --calibration_data_path D -o table.json           (whole)
//   ptqkit calibrate --onnx_path M --calibration_data_path D --shard K/N -o part_K.json
//   ptqkit calibrate --merge part_*.json -o table.json   (= the whole run's bytes, any N, any order)
//   ... --for_sensitivity --granularity node   (the tensors of a sensitivity scan, not quantize's)
//
// The data and calibration options are quantize's, with the same names and defaults.
#include <fmt/format.h>

#include <filesystem>
#include <memory>

#include "base/io_guard.h"
#include "base/log.h"
#include "cli/commands.h"
#include "cli/option_flags.h"
#include "pipeline/calibrate.h"
#include "ptqkit/calibration.h"
#include "ptqkit/error.h"
#include "scan/calibration_part.h"

namespace ptqkit::cli {
namespace {

std::string DefaultOutput(const std::string& model, const shard::ShardSpec& s, bool sharded) {
  const std::filesystem::path p(model);
  const std::string suffix = sharded ? fmt::format(".calibration.part{}of{}.json", s.index, s.count) : ".calibration.json";
  return (p.parent_path() / (p.stem().string() + suffix)).string();
}

int Merge(const std::vector<std::string>& paths, const std::string& output) {
  if (output.empty()) throw Error("calibrate --merge needs -o/--output (the merged table's path)");
  std::vector<shard::CalibrationPart> parts;
  for (const auto& p : paths) parts.push_back(shard::LoadCalibrationPart(p));
  const calib::CalibrationTable table = shard::MergeCalibrationParts(parts, paths);
  table.Save(output);
  int64_t samples = 0;
  for (const auto& p : parts) samples += p.num_samples;
  fmt::print("Merged {} part(s): {} tensor(s), {} sample(s)\nWrote {}\n", parts.size(), table.tensors.size(), samples,
             output);
  return 0;
}

}  // namespace

Command RegisterCalibrate(CLI::App& app) {
  auto* cmd = app.add_subcommand("calibrate", "Calibrate only: write a calibration table, or one shard's part of it");
  auto settings = std::make_shared<options::QuantizeSettings>();
  AddOptionFlags(cmd, options::kCalibrate, settings);
  auto shard_text = std::make_shared<std::string>();
  auto merge = std::make_shared<std::vector<std::string>>();
  auto output = std::make_shared<std::string>();
  cmd->add_option("-o,--output", *output,
                  "Table (or part with --shard) to write (default: <model>.calibration.json / "
                  "<model>.calibration.partKofN.json beside the model)");
  cmd->add_option("--shard", *shard_text, "K/N: calibrate only the K-th of N contiguous slices of the batches (K from 0)");
  cmd->add_option("--merge", *merge, "Merge these part files (every shard of one run, any order) into one table")
      ->expected(1, -1);
  // --granularity and --op_types_scope are the sensitivity scan's own table entries.
  auto for_scan = std::make_shared<bool>(false);
  cmd->add_flag("--for_sensitivity", *for_scan,
                "Calibrate the tensors of a sensitivity scan (--granularity, --op_types_scope; precision = "
                "--quantize_mode) instead of quantize's plan, for `sensitivity --calibration_cache`");

  return [=]() {
    QuantizeOptions* o = &settings->options;
    const std::string* log_file = &settings->log_file;
    log::SetLevel(log::ParseLevel(settings->log_level));
    const bool sharded = !shard_text->empty();
    const shard::ShardSpec spec = sharded ? shard::ParseShard(*shard_text) : shard::ShardSpec{};
    const std::string path =
        output->empty() && !o->onnx_path.empty() ? DefaultOutput(o->onnx_path, spec, sharded) : *output;
    {
      IoGuard files;  // nothing written may be a file this run reads (the log is opened next)
      files.Input(o->onnx_path, "--onnx_path");
      files.InputFolderFiles(o->calibration_data_path, "--calibration_data_path");
      for (const auto& part : *merge) files.Input(part, "--merge");
      files.Output(path, "-o");
      files.Output(*log_file, "--log_file");
      files.Check();
    }
    if (!log_file->empty()) log::SetFile(*log_file);
    if (!merge->empty()) {
      if (!o->onnx_path.empty() || !shard_text->empty()) {
        throw Error("calibrate --merge takes only part files and -o (the parts know their model and data)");
      }
      return Merge(*merge, *output);
    }
    if (o->onnx_path.empty()) throw Error("calibrate needs --onnx_path (or --merge parts...)");
    SensitivityOptions* scan = &settings->scan.options;
    scan->target_precision = o->quantize_mode;
    const shard::CalibrationPart part = Calibrate(*o, spec, *for_scan ? scan : nullptr);
    if (sharded) shard::SaveCalibrationPart(part, path);
    else part.table.Save(path);
    fmt::print("calibration{}: {} tensor(s), {} sample(s)\nWrote {}\n",
               sharded ? " shard " + shard::ShardName(spec) : "", part.table.tensors.size(), part.num_samples, path);
    return 0;
  };
}

}  // namespace ptqkit::cli
