#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>

#include "base/log.h"
#include "pipeline/prepared_model.h"
#include "cli/commands.h"
#include "cli/number_checks.h"
#include "cli/progress_bar.h"
#include "cli/response_files.h"
#include "ptqkit/calibration.h"
#include "ptqkit/quantize.h"

namespace ptqkit::cli {
namespace {

void PrintLoss(const LossReport& loss) {
  if (!loss.evaluated) {
    fmt::print("loss vs FP32: not measured ({})\n", loss.not_evaluated_because);
    return;
  }
  fmt::print("loss vs FP32 on {} {}{} sample(s){}, ONNX Runtime {} level:\n", loss.samples,
             loss.synthetic ? "SYNTHETIC " : "", loss.held_out ? "held-out" : "calibration",
             loss.held_out ? "" : " (too few to hold out)", loss.ort_level);
  for (const OutputLoss& o : loss.outputs) {
    if (!o.is_float) {
      fmt::print("  {:<24} exact match {:.1f}%\n", o.output, 100.0 * o.exact_match.value_or(1.0));
      continue;
    }
    fmt::print("  {:<24} cosine {:.4f} (min {:.4f})  rel. RMSE {:.4f}{}{}\n", o.output, o.cosine_mean, o.cosine_min,
               o.relative_rmse, o.top1_agreement ? fmt::format("  top-1 agreement {:.1f}%", 100.0 * *o.top1_agreement) : "",
               o.non_finite > 0 ? fmt::format("  {} NaN/Inf", o.non_finite) : "");
  }
  if (!loss.warning.empty()) fmt::print("  WARNING: {}\n", loss.warning);
}

void PrintBudget(const AccuracyBudgetReport& b) {
  if (!b.used) return;
  fmt::print("accuracy budget: {} <= {} {} with {} node(s) in float ({} ranked by sensitivity; {} full evaluation(s))\n",
             b.metric, b.budget, b.met ? "met" : "NOT met", b.excluded_nodes.size(),
             b.ranked_nodes, b.evaluations);
  for (const auto& [k, d] : b.curve) fmt::print("  {:>6} in float -> {} {:.6g}\n", k, b.metric, d);
  for (const auto& node : b.excluded_nodes) fmt::print("  kept in float: {}\n", node);
}

void PrintSummary(const QuantizeReport& r, const QuantizeOptions& o) {
  fmt::print("Wrote {}\n", r.output_path);
  if (r.calibration_method == "rtn") {
    fmt::print("calibration: none (int4 rtn reads no data)\n");
  } else if (r.calibration_from_cache) {
    fmt::print("calibration: {:.3f} s (ranges read from {})\n", r.calibration_seconds, o.calibration_cache);
  } else {
    std::string eps;
    for (const auto& e : r.execution_providers) eps += (eps.empty() ? "" : ", ") + e;
    fmt::print("calibration: {:.3f} s ({} {} sample(s) in batches of {}, method {}, on {})\n", r.calibration_seconds,
               r.num_calibration_samples, r.synthetic_data ? "SYNTHETIC" : "real", r.batch_size, r.calibration_method, eps);
  }
  if (r.original_opset != r.output_opset) fmt::print("opset: {} -> {}\n", r.original_opset, r.output_opset);
  int total = 0;
  for (const auto& [op, n] : r.quantized_by_op_type) total += n;
  if (o.quantize_mode == "int4") fmt::print("quantized nodes: {} ({} INT4 weights)\n", total, r.qdq_pairs);
  else fmt::print("quantized nodes: {} ({} Q/DQ pairs)\n", total, r.qdq_pairs);
  for (const auto& [op, n] : r.quantized_by_op_type) fmt::print("  {:<24} {}\n", op, n);
  if (r.bias_corrected_convs > 0 || r.smoothed_matmul_inputs > 0) {
    fmt::print("weights edited: {} Conv bias(es) corrected, {} MatMul input(s) smoothed (--bias_correction false, "
               "--smoothquant_alpha 0 turn them off)\n",
               r.bias_corrected_convs, r.smoothed_matmul_inputs);
  }
  fmt::print("left in float: {}\n", r.left_in_float.size());
  size_t width = 0;
  for (const auto& [node, why] : r.left_in_float) width = std::max(width, node.size());
  for (const auto& [node, why] : r.left_in_float) fmt::print("  {:<{}}  {}\n", node, width, why);
  PrintBudget(r.accuracy_budget);
  PrintLoss(r.loss);
  fmt::print("total: {:.3f} s\n", r.total_seconds);
}

}  // namespace

Command RegisterQuantize(CLI::App& app) {
  auto* cmd = app.add_subcommand("quantize", "Quantize an FP32 ONNX model (writes a new model with Q/DQ nodes)");
  auto o = std::make_shared<QuantizeOptions>();
  auto shapes = std::make_shared<std::string>();
  auto log_level = std::make_shared<std::string>("INFO");
  auto log_file = std::make_shared<std::string>();

  cmd->add_option("--onnx_path", o->onnx_path, "Input FP32 ONNX model (never modified)")->required();
  cmd->add_option("--output_path", o->output_path, "Output model (default: <model>.quant.onnx beside the input)");
  cmd->add_option("--quantize_mode", o->quantize_mode, "int8 | fp8 | int4 (int4: weight-only MatMul/Gemm)")
      ->capture_default_str();
  cmd->add_option("--calibration_data_path", o->calibration_data_path,
                  ".npy (single input), .npz (keys = input names) or a folder of them; none = synthetic data");
  // No default string here: the default depends on the mode (mse for int8/fp8, awq_clip for int4).
  cmd->add_option("--calibration_method", o->calibration_method,
                  "int8/fp8: max | entropy | percentile | mse (default mse); int4: rtn | awq_clip | awq_lite "
                  "(default awq_clip)");
  cmd->add_option("--percentile", o->percentile, "Percentile for --calibration_method percentile")->capture_default_str();
  auto batch_axis = std::make_shared<std::vector<std::string>>();
  cmd->add_option("--calibration_shapes", *shapes, "Calibration shapes, e.g. input:8x3x224x224,mask:8x128");
  cmd->add_option("--calibration_batch_axis", *batch_axis,
                  "Axis the samples of an input lie along, e.g. state:1 (repeatable or comma list; default: "
                  "inferred when the input has exactly one dynamic dim, else 0; scalars are fed whole)");
  cmd->add_option("--calibration_batch_size", o->calibration_batch_size,
                  "Batch size for models with a dynamic batch dimension (default 1)")
      ->check(Count(1, 12));
  cmd->add_option("--calibration_eps", o->calibration_eps, "Execution providers in order: cpu, cuda:N, trt")
      ->capture_default_str();
  cmd->add_option("--trt_plugins", o->trt_plugins, "TensorRT plugin libraries (.so) for the trt provider");
  cmd->add_option("--intra_op_num_threads", o->intra_op_num_threads, "ONNX Runtime threads (0 = its default)")
      ->check(Count(0, 6));
  cmd->add_option("--num_synthetic_samples", o->num_synthetic_samples, "Samples of synthetic data when none is given")
      ->check(Count(1, 18))
      ->capture_default_str();
  cmd->add_option("--op_types_to_quantize", o->op_types_to_quantize, "Quantize only these op types (bypasses the rules)");
  cmd->add_option("--op_types_to_exclude", o->op_types_to_exclude, "Keep these op types in float");
  cmd->add_option("--nodes_to_quantize", o->nodes_to_quantize,
                  "Quantize only these nodes: exact names, or regexes matched from the start of the name");
  cmd->add_option("--nodes_to_exclude", o->nodes_to_exclude,
                  "Keep these nodes in float: exact names, or regexes matched from the start of the name");
  // Long lists never need the command line: one name a line, taken literally (any character but
  // a newline), added to the option of the same name.
  auto lists = std::make_shared<std::map<std::string, std::string>>();
  for (const char* name : {"nodes_to_exclude", "nodes_to_quantize", "op_types_to_exclude", "op_types_to_quantize"}) {
    cmd->add_option(fmt::format("--{}_file", name), (*lists)[name],
                    fmt::format("File with more --{} entries, one a line, taken literally", name));
  }
  cmd->add_flag("--dq_only", o->dq_only, "Store weights as INT8 initializers with DequantizeLinear only");
  cmd->add_option("--target_runtime", o->target_runtime,
                  "trt | ort_cpu: the runtime the output is for (ort_cpu: FP8 Q/DQ in the form ONNX Runtime's "
                  "CPU optimizations compute correctly)")
      ->capture_default_str();
  cmd->add_flag("--reduce_range", o->reduce_range,
                "int8: 7-bit weights, for ONNX Runtime on x86 CPUs without VNNI (no u8s8 saturation)");
  cmd->add_option("--bias_correction", o->bias_correction,
                  "int8/fp8: correct quantized Conv biases for the mean shift of weight rounding (edits biases)")
      ->capture_default_str();
  cmd->add_option("--smoothquant_alpha", o->smoothquant_alpha,
                  "int8: SmoothQuant migration strength for MatMuls after a Mul by a constant (GELU, LayerNorm; "
                  "edits weights); 0 = off")
      ->capture_default_str();
  cmd->add_option("--block_size", o->block_size, "int4: weights per scale along K (-1: one block per output channel)")
      ->capture_default_str();
  cmd->add_flag("--use_zero_point", o->use_zero_point, "int4: asymmetric UINT4 weights with zero points");
  cmd->add_option("--awqclip_alpha_step", o->awqclip_alpha_step, "int4 awq_clip: step of the clipping-ratio search")
      ->capture_default_str();
  cmd->add_option("--awqclip_alpha_min", o->awqclip_alpha_min, "int4 awq_clip: smallest clipping ratio tried")
      ->capture_default_str();
  cmd->add_option("--high_precision_dtype", o->high_precision_dtype,
                  "fp32 | fp16 | bf16: type of everything not quantized (graph I/O keep their type via Casts)")
      ->capture_default_str();
  cmd->add_option("--op_types_to_exclude_fp16", o->op_types_to_exclude_fp16,
                  "With fp16/bf16: keep these op types in float32 (Casts around them)");
  cmd->add_flag("--direct_io_types", o->direct_io_types,
                "With fp16/bf16: change the graph inputs/outputs to that type instead of adding Casts");
  cmd->add_flag("--use_external_data_format", o->use_external_data_format, "Write weights to <output>.data");
  cmd->add_option("--eval_samples", o->eval_samples,
                  "Loss report: hold out the last N calibration samples (at most a quarter) and compare the "
                  "quantized model with FP32 on them (0 = no report)")
      ->capture_default_str();
  cmd->add_option("--accuracy_budget", o->accuracy_budget,
                  "Keep in float the fewest nodes (ranked by a node sensitivity scan) such that the divergence "
                  "from FP32 on the held-out samples is at most this (see --accuracy_budget_metric)");
  cmd->add_option("--accuracy_budget_metric", o->accuracy_budget_metric,
                  "cos | kl_div | mse (summed over outputs of the per-sample mean) | top1 (largest top-1 "
                  "disagreement, 0..1)")
      ->capture_default_str();
  cmd->add_option("--report_json", o->report_json, "Write the run's report (loss included) as JSON here");
  cmd->add_option("--report_html", o->report_html,
                  "Write the run's report as one HTML page (loss table, culprits, accuracy-budget curve)");
  cmd->add_option("--save_calibration_cache", o->save_calibration_cache, "Write the calibration table (JSON) here");
  cmd->add_option("--calibration_cache", o->calibration_cache, "Read the calibration table (JSON) instead of calibrating");
  cmd->add_option("--log_level", *log_level, "DEBUG | INFO | WARNING | ERROR")->capture_default_str();
  cmd->add_option("--log_file", *log_file, "Also write log messages to this file");

  return [o, shapes, batch_axis, log_level, log_file, lists]() {
    log::SetLevel(log::ParseLevel(*log_level));
    const std::map<std::string, std::vector<std::string>*> targets = {
        {"nodes_to_exclude", &o->nodes_to_exclude},
        {"nodes_to_quantize", &o->nodes_to_quantize},
        {"op_types_to_exclude", &o->op_types_to_exclude},
        {"op_types_to_quantize", &o->op_types_to_quantize}};
    for (const auto& [name, path] : *lists) {
      if (path.empty()) continue;
      for (auto& entry : ReadListFile(path, "--" + name + "_file")) targets.at(name)->push_back(std::move(entry));
    }
    if (!log_file->empty()) {
      // The log is opened before the run: keep it off every file the run reads or writes.
      IoGuard files = QuantizeFiles(*o, QuantizeOutputPath(*o));
      files.Output(*log_file, "--log_file");
      files.Check();
      log::SetFile(*log_file);
    }
    if (!shapes->empty()) o->calibration_shapes = ParseShapeList(*shapes);
    std::string axes_text;
    for (const std::string& entry : *batch_axis) axes_text += entry + ",";
    o->calibration_batch_axis = ParseBatchAxisList(axes_text);
    ProgressBar bar("calibrating");
    o->progress = [&bar](int64_t done, int64_t total) { bar.Update(done, total); };
    const QuantizeReport report = Quantize(*o);
    o->progress = nullptr;
    PrintSummary(report, *o);
    return 0;
  };
}

}  // namespace ptqkit::cli
