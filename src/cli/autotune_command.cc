// `ptqkit autotune`: the standalone entry of the autotune search (ModelOpt's `python -m
// modelopt.onnx.quantization.autotune`): a quantize run with autotune on, whose flags drop the
// `autotune_` prefix (--mode, --schemes_per_region, --state_file, ...). Its quantization options
// are the common ones; every other quantize option is on `ptqkit quantize --autotune`.
#include <fmt/format.h>

#include <memory>

#include "base/log.h"
#include "cli/autotune_flags.h"
#include "cli/commands.h"
#include "cli/number_checks.h"
#include "cli/progress_bar.h"
#include "ptqkit/quantize.h"

namespace ptqkit::cli {

Command RegisterAutotune(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "autotune", "Quantize with the Q/DQ placement searched for speed under an accuracy budget (= quantize --autotune)");
  auto o = std::make_shared<QuantizeOptions>();
  o->autotune.mode = "default";
  auto log_level = std::make_shared<std::string>("INFO");
  cmd->add_option("--onnx_path", o->onnx_path, "Input FP32 ONNX model (never modified)")->required();
  cmd->add_option("--output_path", o->output_path, "Output model (default: <model>.quant.onnx beside the input)");
  cmd->add_option("--mode", o->autotune.mode, "quick | default | extensive")
      ->check(CLI::IsMember({"quick", "default", "extensive"}))
      ->capture_default_str();
  cmd->add_option("--quantize_mode,--quant_type", o->quantize_mode, "int8 | fp8 (fp8 needs a GPU backend)")
      ->capture_default_str();
  cmd->add_option("--calibration_data_path", o->calibration_data_path,
                  ".npy (single input), .npz (keys = input names) or a folder of them; none = synthetic data");
  cmd->add_option("--calibration_method", o->calibration_method, "max | entropy | percentile | mse (default mse)");
  cmd->add_option("--calibration_eps", o->calibration_eps, "Execution providers for calibration: cpu, cuda:N, trt")
      ->capture_default_str();
  cmd->add_option("--num_synthetic_samples", o->num_synthetic_samples, "Samples of synthetic data when none is given")
      ->check(Count(1, 18))
      ->capture_default_str();
  cmd->add_option("--nodes_to_exclude", o->nodes_to_exclude, "Keep these nodes in float (names or regexes)");
  cmd->add_option("--op_types_to_exclude", o->op_types_to_exclude, "Keep these op types in float");
  cmd->add_option("--eval_samples", o->eval_samples, "Held-out samples every candidate's accuracy is checked on")
      ->capture_default_str();
  cmd->add_option("--accuracy_budget", o->accuracy_budget,
                  "Largest divergence from FP32 a candidate may have (default: the rules' placement's own)");
  cmd->add_option("--accuracy_budget_metric", o->accuracy_budget_metric, "cos | kl_div | mse | top1")
      ->capture_default_str();
  cmd->add_option("--report_json", o->report_json, "Write the run's report (autotune included) as JSON here");
  cmd->add_option("--log_level", *log_level, "DEBUG | INFO | WARNING | ERROR")->capture_default_str();
  const std::function<void()> finish = RegisterAutotuneFlags(cmd, o->autotune, "");

  return [o, log_level, finish]() {
    log::SetLevel(log::ParseLevel(*log_level));
    finish();
    ProgressBar bar("calibrating");
    o->progress = [&bar](int64_t done, int64_t total) { bar.Update(done, total); };
    const QuantizeReport report = Quantize(*o);
    o->progress = nullptr;
    int total = 0;
    for (const auto& [op, n] : report.quantized_by_op_type) total += n;
    fmt::print("Wrote {}\nquantized nodes: {} ({} Q/DQ pairs); left in float: {}\n", report.output_path, total,
               report.qdq_pairs, report.left_in_float.size());
    PrintAutotuneReport(report.autotune);
    return 0;
  };
}

}  // namespace ptqkit::cli
