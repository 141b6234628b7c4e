#include "pipeline/quantize_summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

namespace ptqkit {
namespace {

void AppendLoss(std::string& out, const LossReport& loss) {
  auto it = std::back_inserter(out);
  if (!loss.evaluated) {
    fmt::format_to(it, "loss vs FP32: not measured ({})\n", loss.not_evaluated_because);
    return;
  }
  fmt::format_to(it, "loss vs FP32 on {} {}{} sample(s){}, ONNX Runtime {} level:\n", loss.samples,
                 loss.synthetic ? "SYNTHETIC " : "", loss.held_out ? "held-out" : "calibration",
                 loss.held_out ? "" : " (too few to hold out)", loss.ort_level);
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
}

void AppendBudget(std::string& out, const AccuracyBudgetReport& b) {
  if (!b.used) return;
  auto it = std::back_inserter(out);
  fmt::format_to(it,
                 "accuracy budget: {} <= {} {} with {} node(s) in float ({} ranked by sensitivity; {} full "
                 "evaluation(s))\n",
                 b.metric, b.budget, b.met ? "met" : "NOT met", b.excluded_nodes.size(), b.ranked_nodes, b.evaluations);
  for (const auto& [k, d] : b.curve) fmt::format_to(it, "  {:>6} in float -> {} {:.6g}\n", k, b.metric, d);
  for (const auto& node : b.excluded_nodes) fmt::format_to(it, "  kept in float: {}\n", node);
}

}  // namespace

std::string FormatQuantizeSummary(const QuantizeReport& r, const QuantizeOptions& o) {
  std::string out;
  auto it = std::back_inserter(out);
  fmt::format_to(it, "Wrote {}\n", r.output_path);
  if (r.calibration_method == "rtn") {
    fmt::format_to(it, "calibration: none (int4 rtn reads no data)\n");
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
  if (o.quantize_mode == "int4") fmt::format_to(it, "quantized nodes: {} ({} INT4 weights)\n", total, r.qdq_pairs);
  else fmt::format_to(it, "quantized nodes: {} ({} Q/DQ pairs)\n", total, r.qdq_pairs);
  for (const auto& [op, n] : r.quantized_by_op_type) fmt::format_to(it, "  {:<24} {}\n", op, n);
  fmt::format_to(it, "left in float: {}\n", r.left_in_float.size());
  size_t width = 0;
  for (const auto& [node, why] : r.left_in_float) width = std::max(width, node.size());
  for (const auto& [node, why] : r.left_in_float) fmt::format_to(it, "  {:<{}}  {}\n", node, width, why);
  AppendBudget(out, r.accuracy_budget);
  AppendLoss(out, r.loss);
  fmt::format_to(it, "total: {:.3f} s\n", r.total_seconds);
  return out;
}

}  // namespace ptqkit
