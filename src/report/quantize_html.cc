#include "report/quantize_html.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/html.h"

namespace ptqkit {
namespace {

using html::Escape;
using html::Row;

constexpr const char* kChartStyle = R"(.chart .axis { stroke: #888; stroke-width: 1; }
.chart .point { fill: #5b8def; }
.chart .point.met { fill: #2e8b57; }
.chart .chosen { fill: none; stroke: #2e8b57; stroke-width: 2; }
.chart .budget { stroke: #d9534f; stroke-width: 1.5; stroke-dasharray: 6 4; }
.chart .budgetlabel { fill: #d9534f; }
)";

std::string Number(double v) { return std::isfinite(v) ? fmt::format("{:.6g}", v) : "inf"; }
std::string Percent(double v) { return fmt::format("{:.1f}%", 100.0 * v); }

// Divergence against nodes kept in float; y on a linear axis from 0 to the largest finite value.
std::string CurveChart(const AccuracyBudgetReport& b) {
  constexpr double kW = 560, kH = 240, kLeft = 70, kBottom = 30, kTop = 10, kRight = 20;
  double max_x = 1, max_y = b.budget;
  for (const auto& [k, d] : b.curve) {
    max_x = std::max(max_x, static_cast<double>(k));
    if (std::isfinite(d)) max_y = std::max(max_y, d);
  }
  if (max_y <= 0) max_y = 1;
  const auto px = [&](double x) { return kLeft + (kW - kLeft - kRight) * x / max_x; };
  const auto py = [&](double y) { return kTop + (kH - kTop - kBottom) * (1.0 - std::min(y, max_y) / max_y); };
  std::string out = fmt::format("<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\">\n",
                                kW, kH);
  out += fmt::format("<line class=\"axis\" x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" />\n", kLeft, kH - kBottom,
                     kW - kRight);
  out += fmt::format("<line class=\"axis\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" />\n", kLeft, kTop, kH - kBottom);
  out += fmt::format("<text x=\"{}\" y=\"{}\">nodes kept in float (0 .. {})</text>\n", kLeft, kH - 8, max_x);
  out += fmt::format("<text x=\"4\" y=\"{}\">{}</text>\n<text x=\"4\" y=\"{}\">0</text>\n", kTop + 10,
                     Escape(Number(max_y)), kH - kBottom);
  out += fmt::format("<line class=\"budget\" x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" />\n", kLeft,
                     py(b.budget), kW - kRight);
  out += fmt::format("<text class=\"budgetlabel\" x=\"{}\" y=\"{:.1f}\">budget {}</text>\n", kW - kRight - 110,
                     py(b.budget) - 4, Escape(Number(b.budget)));
  const size_t chosen = b.excluded_nodes.size();
  for (const auto& [k, d] : b.curve) {
    const bool met = d <= b.budget;
    out += fmt::format("<circle class=\"point{}\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\"><title>{} in float: {}</title></circle>\n",
                       met ? " met" : "", px(static_cast<double>(k)), py(std::isfinite(d) ? d : max_y), k,
                       Escape(Number(d)));
    if (b.met && static_cast<size_t>(k) == chosen) {
      out += fmt::format("<circle class=\"chosen\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"8\" />\n", px(static_cast<double>(k)),
                         py(d));
    }
  }
  return out + "</svg>\n";
}

std::string LossSection(const LossReport& loss) {
  std::string out = "<h2>What quantization cost</h2>\n";
  if (!loss.evaluated) return out + fmt::format("<p>Not measured: {}.</p>\n", Escape(loss.not_evaluated_because));
  out += fmt::format("<p>Quantized vs FP32 on {} {}{} sample(s), ONNX Runtime {} level{}.</p>\n", loss.samples,
                     loss.synthetic ? "SYNTHETIC " : "", loss.held_out ? "held-out" : "calibration (in-sample)",
                     Escape(loss.ort_level),
                     loss.mask_input.empty() ? ""
                                             : fmt::format(", positions where '{}' is 0 left out", Escape(loss.mask_input)));
  out += "<table>\n" +
         Row({"output", "samples", "cosine (mean)", "cosine (min)", "rel. RMSE", "max |diff|", "top-1 / exact", "NaN/Inf"},
             true);
  for (const OutputLoss& o : loss.outputs) {
    const std::string agree = o.top1_agreement ? Percent(*o.top1_agreement)
                              : o.exact_match  ? Percent(*o.exact_match)
                                               : "";
    out += Row({o.output, std::to_string(o.samples), fmt::format("{:.5f}", o.cosine_mean),
                fmt::format("{:.5f}", o.cosine_min), Number(o.relative_rmse), Number(o.max_abs_diff), agree,
                std::to_string(o.non_finite)});
  }
  out += "</table>\n";
  if (!loss.warning.empty()) out += fmt::format("<p class=\"note\">{}</p>\n", Escape(loss.warning));
  if (!loss.culprits.empty()) {
    out += "<h2>Largest estimated activation errors</h2>\n<table>\n" +
           Row({"tensor", "mean |x - QDQ(x)| / |x|", "clipped", "amax", "absmax"}, true);
    for (const TensorClipping& c : loss.culprits) {
      out += Row({c.tensor, Number(c.relative_error), fmt::format("{:.3g}%", 100.0 * c.clipped_fraction),
                  Number(c.amax), Number(c.absmax)});
    }
    out += "</table>\n";
  }
  return out;
}

std::string BudgetSection(const AccuracyBudgetReport& b) {
  if (!b.used) return "";
  std::string out = "<h2>Accuracy budget</h2>\n";
  out += fmt::format("<p>{} &lt;= {}: <b>{}</b> with {} node(s) kept in float ({} ranked by sensitivity; {} full "
                     "evaluation(s)).</p>\n",
                     Escape(b.metric), Escape(Number(b.budget)), b.met ? "met" : "NOT met", b.excluded_nodes.size(),
                     b.ranked_nodes, b.evaluations);
  out += CurveChart(b);
  out += "<table>\n" + Row({"nodes in float", "divergence"}, true);
  for (const auto& [k, d] : b.curve) out += Row({std::to_string(k), Number(d)});
  out += "</table>\n";
  if (!b.excluded_nodes.empty()) {
    out += "<p>Kept in float, most sensitive first:</p>\n<ol>\n";
    for (const auto& n : b.excluded_nodes) out += fmt::format("<li><code>{}</code></li>\n", Escape(n));
    out += "</ol>\n";
  }
  return out;
}

// --mixed_precision int8,fp8: the candidates scored and each node's format with its scan scores.
std::string FormatSection(const QuantizeReport& r) {
  if (r.node_formats.empty() && r.format_candidates.empty()) return "";
  std::string out = "<h2>Activation formats</h2>\n";
  if (!r.format_candidates.empty()) {
    out += "<p>Held-out divergence of each candidate (the lowest is written):</p>\n<table>\n" +
           Row({"candidate", "divergence"}, true);
    for (const auto& [candidate, d] : r.format_candidates) out += Row({candidate, Number(d)});
    out += "</table>\n";
  }
  out += "<p>Each node's format and its node scan scores, most sensitive first:</p>\n<table>\n" +
         Row({"node", "format", "int8 score", "fp8 score"}, true);
  for (const auto& f : r.node_formats) out += Row({f.node, f.format, Number(f.int8_score), Number(f.fp8_score)});
  return out + "</table>\n";
}

}  // namespace

std::string RenderQuantizeReport(const QuantizeReport& r, const QuantizeOptions& o) {
  std::string out =
      "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n"
      "<meta charset=\"utf-8\" />\n<title>ptqkit quantize report</title>\n<style>\n";
  out += html::kBaseStyle;
  out += kChartStyle;
  out += "</style>\n</head>\n<body>\n<h1>ptqkit quantize report</h1>\n";
  int total = 0;
  for (const auto& [op, n] : r.quantized_by_op_type) total += n;
  out += html::KeyValueTable({{"model", o.onnx_path},
                              {"output", r.output_path},
                              {"mode", o.quantize_mode},
                              {"target runtime", o.target_runtime},
                              {"calibration", fmt::format("{}, {} {} sample(s)", r.calibration_method,
                                                          r.num_calibration_samples,
                                                          r.synthetic_data ? "SYNTHETIC" : "real")},
                              {"opset", fmt::format("{} -> {}", r.original_opset, r.output_opset)},
                              {"quantized nodes", fmt::format("{} ({} Q/DQ pairs)", total, r.qdq_pairs)}});
  out += LossSection(r.loss);
  out += FormatSection(r);
  out += BudgetSection(r.accuracy_budget);
  out += "<h2>Left in float</h2>\n<table>\n" + Row({"node", "why"}, true);
  for (const auto& [node, why] : r.left_in_float) out += Row({node, why});
  out += "</table>\n</body>\n</html>\n";
  return out;
}

}  // namespace ptqkit
