#include "pipeline/accuracy_budget_search.h"

#include <set>

#include "base/log.h"
#include "ptqkit/sensitivity.h"
#include "scan/scan_options.h"
#include "scan/sensitivity_shard.h"
#include "sensitivity/rank_order.h"

namespace ptqkit {

namespace {

// A top1 divergence moves in steps of 1/rows. When one step is larger than the budget, the budget
// holds only where no held-out row flips, which says little beyond those rows (EfficientNet-Lite0,
// 8 held-out samples: a top1 budget of 0.01 was met with nothing in float, at 0.965 agreement on
// 512 other crops).
void WarnOfCoarseTop1(double budget, int64_t rows) {
  if (rows <= 0 || 1.0 / static_cast<double>(rows) <= budget) return;
  log::Warn("--accuracy_budget_metric top1 compares {} argmax row(s) of the held-out samples: one flip is {:.3g}, "
            "more than the budget {:.3g}, so the budget means \"no flip on these rows\". kl_div measures smaller "
            "losses; more calibration samples give more held-out rows",
            rows, 1.0 / static_cast<double>(rows), budget);
}

}  // namespace

std::vector<std::pair<std::string, double>> RankQuantizedNodes(
    const QuantizeOptions& o, const PreparedModel& prepared, const std::string& precision,
    const std::vector<std::pair<std::string, std::string>>& quantized_nodes, const QuantizeReport& report) {
  const accuracy::BudgetMetric metric = accuracy::ParseBudgetMetric(o.accuracy_budget_metric);
  // The ranking probes calibrate and run as this run does (data, method, percentile, table, ...).
  SensitivityOptions so;
  UseQuantizeCalibration(o, so);
  so.calibration_method = report.calibration_method;  // the method this run resolved
  so.num_calib_samples = o.num_synthetic_samples;
  so.granularity = "node";
  so.metric = metric == accuracy::BudgetMetric::kTop1 ? "kl_div" : accuracy::BudgetMetricName(metric);
  so.target_precision = precision;
  // Every sample for every node: the search walks this order node by node, including the many
  // small scores that settling would leave in an unsettled order.
  so.stop_when_settled = false;
  // Only what this run quantizes can be kept in float: probe those op types, rank those nodes.
  std::set<std::string> quantized, op_types;
  for (const auto& [node, op] : quantized_nodes) {
    quantized.insert(node);
    op_types.insert(op);
  }
  so.op_types_scope.assign(op_types.begin(), op_types.end());
  // The scan ranks the model this run quantizes, as it holds it: no second read of the weights.
  std::vector<std::pair<std::string, double>> ranked;
  for (const auto& [node, score] : sensitivity::RankByScore(ScoreSensitivityOf(so, prepared).scores)) {
    if (quantized.count(node)) ranked.emplace_back(node, score);
  }
  return ranked;
}

std::vector<std::string> SearchAccuracyBudget(const QuantizeOptions& o, const PreparedModel& prepared,
                                              const CandidateBuilder& build, CandidateScorer& score,
                                              const std::vector<std::pair<std::string, std::string>>& quantized_nodes,
                                              QuantizeReport* report,
                                              const std::vector<std::string>* given_ranking) {
  const onnx::ModelProto& model = prepared.proto;
  const accuracy::BudgetMetric metric = score.metric();
  // Where ONNX Runtime gets the weights as inputs (over 256 MiB) a built candidate would be a
  // second copy of them: candidates are built light (placeholders, each quantized weight
  // fake-quantized at run time) and run over the model's own weights, with the same bits.
  const bool light = !o.accuracy_eval && build.LightApplies(model);
  const auto divergence_with = [&](const std::vector<std::string>& in_float) {
    if (light) return score.ScoreLight(build.BuildLight(model, in_float), model);
    return score.ScoreDisposable(build.Build(model, in_float));
  };

  const double at_zero = divergence_with({});
  WarnOfCoarseTop1(o.accuracy_budget, metric == accuracy::BudgetMetric::kTop1 ? score.top1_rows() : 0);
  std::vector<std::string> ranking;
  if (at_zero > o.accuracy_budget && given_ranking != nullptr) {
    ranking = *given_ranking;
  } else if (at_zero > o.accuracy_budget) {
    log::Info("accuracy budget: divergence {:.6g} > {:.6g}; ranking nodes with a sensitivity scan", at_zero,
              o.accuracy_budget);
    for (const auto& [node, s] : RankQuantizedNodes(o, prepared, o.quantize_mode, quantized_nodes, *report)) {
      ranking.push_back(node);
    }
  }
  AccuracyBudgetReport r = accuracy::SearchCut(static_cast<int64_t>(ranking.size()), o.accuracy_budget, at_zero, [&](int64_t k) {
    return divergence_with(std::vector<std::string>(ranking.begin(), ranking.begin() + k));
  });
  r.metric = score.metric_name();
  r.evaluations += 1;  // the full quantization's
  for (size_t i = 0; i < r.excluded_nodes.size(); ++i) r.excluded_nodes[i] = ranking[i];
  if (!r.met) {
    log::Warn("accuracy budget {} ({}) not met even with all {} ranked node(s) in float (divergence {:.6g}); they stay "
              "in float",
              o.accuracy_budget, r.metric, ranking.size(), r.curve.back().second);
  }
  report->accuracy_budget = r;
  return r.excluded_nodes;
}

}  // namespace ptqkit
