#include "report/quantize_summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <iterator>
#include <map>

#include "quant/formats/formats.h"

namespace ptqkit {
namespace {

// The loss report runs the model twice more over the held-out samples: on a large model that is a
// visible part of the run, and the user should know what it cost and how to skip it.
constexpr double kLossCostWorthSaying = 2.0;    // seconds
constexpr double kLossShareWorthSaying = 0.2;  // of the whole run

void AppendLoss(std::string& out, const LossReport& loss, double total_seconds) {
  auto it = std::back_inserter(out);
  if (!loss.evaluated) {
    fmt::format_to(it, "loss vs FP32: not measured ({})\n", loss.not_evaluated_because);
    return;
  }
  fmt::format_to(it, "loss vs FP32 on {} {}{} sample(s){}, ONNX Runtime {} level{}:\n", loss.samples,
                 loss.synthetic ? "SYNTHETIC " : "", loss.held_out ? "held-out" : "calibration",
                 loss.held_out ? "" : " (too few to hold out)", loss.ort_level,
                 loss.mask_input.empty() ? "" : fmt::format(", positions where '{}' is 0 left out", loss.mask_input));
  for (const OutputLoss& o : loss.outputs) {
    if (!o.is_float) {
      fmt::format_to(it, "  {:<24} exact match {:.1f}%\n", o.output, 100.0 * o.exact_match.value_or(1.0));
      continue;
    }
    fmt::format_to(it, "  {:<24} cosine {:.4f} (min {:.4f})  rel. RMSE {:.4f}{}{}\n", o.output, o.cosine_mean,
                   o.cosine_min, o.relative_rmse,
                   o.top1_agreement ? fmt::format("  top-1 agreement {:.1f}%", 100.0 * *o.top1_agreement) : "",
                   o.non_finite > 0 ? fmt::format("  {} NaN/Inf", o.non_finite) : "");
  }
  if (!loss.warning.empty()) fmt::format_to(it, "  WARNING: {}\n", loss.warning);
  if (loss.seconds >= kLossCostWorthSaying && loss.seconds >= kLossShareWorthSaying * total_seconds) {
    fmt::format_to(it, "  this report took {:.1f} s of the run's {:.1f} s (--eval_samples 0 turns it off)\n",
                   loss.seconds, total_seconds);
  }
}

void AppendBudget(std::string& out, const AccuracyBudgetReport& b) {
  if (!b.used) return;
  auto it = std::back_inserter(out);
  fmt::format_to(it,
                 "accuracy budget: {} <= {} {} with {} node(s) in {} ({} ranked by sensitivity; {} full "
                 "evaluation(s))\n",
                 b.metric, b.budget, b.met ? "met" : "NOT met", b.excluded_nodes.size(), b.kept_as, b.ranked_nodes,
                 b.evaluations);
  for (const auto& [k, d] : b.curve) fmt::format_to(it, "  {:>6} in {} -> {} {:.6g}\n", k, b.kept_as, b.metric, d);
  for (const auto& node : b.excluded_nodes) fmt::format_to(it, "  kept in {}: {}\n", b.kept_as, node);
}

void AppendAutotune(std::string& out, const AutotuneReport& r) {
  if (!r.used) return;
  auto it = std::back_inserter(out);
  const auto line = [&](const char* what, const LatencySummary& s) {
    fmt::format_to(it, "  {:<18} {:9.3f} ms median (p10 {:.3f}, p90 {:.3f}, MAD {:.3f}; {} runs)\n", what, s.median_ms,
                   s.p10_ms, s.p90_ms, s.mad_ms, s.runs);
  };
  fmt::format_to(it,
                 "autotune ({}, backend {}, {} warm-up + {} timed runs): {} candidate(s) timed, {} from the state "
                 "file, {} pruned, {:.1f} s\n",
                 r.mode, r.backend, r.warmup_runs, r.timing_runs, r.candidates_timed, r.candidates_from_state,
                 r.candidates_pruned, r.search_seconds);
  line("FP32", r.fp32);
  line("rules' placement", r.default_placement);
  line("autotuned", r.autotuned);
  line("gate: FP32", r.gate_fp32);
  line("gate: autotuned", r.gate_autotuned);
  fmt::format_to(it, "  speedup vs FP32 (gate) {:.3f}x: {}\n", r.speedup_vs_fp32,
                 r.gate_passed ? "kept" : "below --autotune_min_speedup, the output has NO Q/DQ");
  fmt::format_to(it, "  {} divergence: rules' placement {:.6g}, autotuned {:.6g}{}\n", r.divergence_metric,
                 r.divergence_default, r.divergence_autotuned,
                 r.budget >= 0 ? fmt::format(" (budget {})", r.budget) : "");
  fmt::format_to(it, "  groups ordered by {} cost (share of {}):\n", r.cost_source,
                 r.cost_source == "measured" ? "the FP32 model's time" : "multiply-accumulates");
  for (const auto& g : r.groups) {
    if (g.scheme == "quantize" && g.why != "searched") continue;
    fmt::format_to(it, "  {:>5.1f}%  {:<9} x{:<3} {}  [{}]\n", 100 * g.cost_share, g.scheme, g.regions,
                   g.signature.size() > 70 ? g.signature.substr(0, 67) + "..." : g.signature, g.why);
  }
  if (!r.state_file.empty()) fmt::format_to(it, "  state file: {}\n", r.state_file);
}

std::string Upper(std::string_view name) {
  std::string upper(name);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return upper;
}

}  // namespace

std::string FormatQuantizeSummary(const QuantizeReport& r, const QuantizeOptions& o) {
  std::string out;
  auto it = std::back_inserter(out);
  fmt::format_to(it, "Wrote {}\n", r.output_path);
  if (r.calibration_method == "rtn") {
    fmt::format_to(it, "calibration: none ({} rtn: round to nearest{})\n", o.quantize_mode,
                   r.loss.evaluated ? "; the data serves the loss report only" : ", reads no data");
  } else if (r.calibration_from_cache) {
    const std::string& cache = o.calibration_cache.empty() ? o.calibration_cache_path : o.calibration_cache;
    fmt::format_to(it, "calibration: {:.3f} s (ranges read from {})\n", r.calibration_seconds, cache);
  } else {
    fmt::format_to(it, "calibration: {:.3f} s ({} {} sample(s) in batches of {}, method {}, on {})\n",
                   r.calibration_seconds, r.num_calibration_samples, r.synthetic_data ? "SYNTHETIC" : "real",
                   r.batch_size, r.calibration_method, fmt::join(r.execution_providers, ", "));
  }
  if (r.original_opset != r.output_opset) fmt::format_to(it, "opset: {} -> {}\n", r.original_opset, r.output_opset);
  int total = 0;
  for (const auto& [op, n] : r.quantized_by_op_type) total += n;
  const QuantFormat& format = FindFormat(o.quantize_mode, "--quantize_mode");
  if (format.placement.weight_only) {
    const int activations = r.dynamic_block_activations;
    fmt::format_to(it, "quantized nodes: {} ({} {} weights{})\n", total, r.qdq_pairs - activations, Upper(format.name),
                   activations > 0 ? fmt::format(", {} activations in {} blocks scaled at run time", activations,
                                                 Upper(format.name))
                                   : "");
  } else {
    fmt::format_to(it, "quantized nodes: {} ({} Q/DQ pairs)\n", total, r.qdq_pairs);
  }
  for (const auto& [op, n] : r.quantized_by_op_type) {
    const auto kernel = r.integer_kernel.find(op);
    fmt::format_to(it, "  {:<24} {}{}\n", op, n, kernel == r.integer_kernel.end() ? "" : "  -> " + kernel->second);
  }
  if (r.runtime_form != "trt") {
    fmt::format_to(it,
                   "form for --target_runtime {}: {} MatMul(s) quantize their input at run time, {} embedding "
                   "table(s) in INT8 rows",
                   r.runtime_form, r.dynamic_matmuls, r.int8_embeddings);
    if (r.without_integer_kernel.empty()) fmt::format_to(it, "; every quantized op has an integer kernel there\n");
    for (const auto& [op, n] : r.without_integer_kernel) {
      fmt::format_to(it, "; {} {} without an integer kernel there (run in float between Q/DQ)", n, op);
    }
    if (!r.without_integer_kernel.empty()) fmt::format_to(it, "\n");
  }
  std::vector<std::string> int8_nodes;  // --mixed_precision: the nodes whose weight is INT8
  for (const auto& [node, precision] : r.weight_precision) {
    if (precision == "int8" && format.name != "int8") int8_nodes.push_back(node);
  }
  if (!int8_nodes.empty()) {
    fmt::format_to(it, "  weights stored as INT8 (--mixed_precision int4,int8): {} of {} node(s)\n", int8_nodes.size(),
                   r.weight_precision.size());
    for (const auto& node : int8_nodes) fmt::format_to(it, "    {}\n", node);
  }
  if (!r.node_formats.empty() || !r.format_candidates.empty()) {
    std::map<std::string, int> count;
    for (const auto& f : r.node_formats) ++count[f.format];
    if (r.node_formats.empty()) {
      fmt::format_to(it, "activation formats (--mixed_precision): no node has a scan probe of its own (control "
                          "flow); one format throughout\n");
    } else {
      fmt::format_to(it,
                     "activation formats (--mixed_precision): {} INT8, {} FP8 node(s); most sensitive first, each "
                     "node's format and node scan scores (int8 / fp8):\n",
                     count["int8"], count["fp8"]);
    }
    constexpr size_t kListed = 10;  // the rest is in --report_json's node_formats
    for (size_t k = 0; k < std::min(kListed, r.node_formats.size()); ++k) {
      const auto& f = r.node_formats[k];
      fmt::format_to(it, "    {:<40} {}: {:.4g} / {:.4g}\n", f.node, f.format, f.int8_score, f.fp8_score);
    }
    if (r.node_formats.size() > kListed) {
      fmt::format_to(it, "    ... {} more in --report_json (node_formats)\n", r.node_formats.size() - kListed);
    }
    if (!r.format_candidates.empty()) {
      std::vector<std::string> scored;
      for (const auto& [candidate, d] : r.format_candidates) scored.push_back(fmt::format("{} {:.4g}", candidate, d));
      fmt::format_to(it, "  held-out divergence: {} (the lowest is written)\n", fmt::join(scored, ", "));
    }
  }
  if (r.folded_batchnorms + r.folded_channel_affines + r.fused_activations + r.folded_pads > 0) {
    const std::string check = r.canonical_checked_samples > 0
                                  ? fmt::format("outputs vs the model as given: max |diff| {:.3g} on {} sample(s)",
                                                r.canonical_max_abs_diff, r.canonical_checked_samples)
                                  : std::string("outputs not compared (no calibration samples)");
    fmt::format_to(it,
                   "folded before quantizing: {} BatchNormalization, {} channel Mul/Add into Conv/Gemm weights; {} "
                   "activation(s) made one operator; {} Pad(s) made Conv padding; {} (--canonicalize false turns it "
                   "off)\n",
                   r.folded_batchnorms, r.folded_channel_affines, r.fused_activations, r.folded_pads, check);
  }
  if (r.bias_corrected_convs > 0 || r.smoothed_matmul_inputs > 0 || r.equalized_depthwise_convs > 0) {
    fmt::format_to(it,
                   "weights edited: {} Conv bias(es) corrected, {} MatMul input(s) smoothed ({} by an inserted Mul), {} "
                   "depthwise Conv input(s) equalized (--bias_correction false, --smoothquant_alpha 0, "
                   "--depthwise_equalization false turn them off)\n",
                   r.bias_corrected_convs, r.smoothed_matmul_inputs, r.smoothing_muls_inserted,
                   r.equalized_depthwise_convs);
  }
  if (r.weight_rounding.method != "nearest") {
    const WeightRoundingReport& w = r.weight_rounding;
    fmt::format_to(it,
                   "weight rounding ({}): {} of {} weight(s) rounded to minimise their layer's output error, modelled "
                   "error {:.2f}x round-to-nearest's on average; {} forward pass(es), {:.1f} s (--weight_rounding "
                   "nearest turns it off)\n",
                   w.method, w.rounded, w.considered, w.mean_error_ratio, w.forward_passes, w.seconds);
  }
  fmt::format_to(it, "left in float: {}\n", r.left_in_float.size());
  size_t width = 0;
  for (const auto& [node, why] : r.left_in_float) width = std::max(width, node.size());
  for (const auto& [node, why] : r.left_in_float) fmt::format_to(it, "  {:<{}}  {}\n", node, width, why);
  AppendBudget(out, r.accuracy_budget);
  AppendAutotune(out, r.autotune);
  AppendLoss(out, r.loss, r.total_seconds);
  if (r.ort_fp16_bias_overflows > 0) {
    fmt::format_to(it,
                   "ONNX Runtime: its WeightBiasQuantization rule (basic level and above) turns the float16 bias of "
                   "{} Conv/Gemm node(s) of this file into inf (bias / (x_scale * w_scale) passes 65504 in float16); "
                   "validate with that rule disabled (Python: disabled_optimizers=[\"WeightBiasQuantization\"]), "
                   "as ptqkit's loss report does. TensorRT keeps the bias in float.\n",
                   r.ort_fp16_bias_overflows);
  }
  fmt::format_to(it, "total: {:.3f} s\n", r.total_seconds);
  return out;
}

}  // namespace ptqkit
