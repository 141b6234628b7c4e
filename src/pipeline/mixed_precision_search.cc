#include "pipeline/mixed_precision_search.h"

#include <algorithm>
#include <map>
#include <vector>

#include "accuracy/accuracy_budget.h"
#include "base/log.h"

namespace ptqkit {

std::set<std::string> SearchInt8Weights(const QuantizeOptions& o, const onnx::ModelProto& fp32, const Placement& plan,
                                        const RewriteOptions& rewrite, CandidateScorer& score,
                                        QuantizeReport* report) {
  const std::set<std::string> fixed = rewrite.blocked.high_weights;
  const auto divergence_with = [&](const std::set<std::string>& int8_weights) {
    onnx::ModelProto candidate = fp32;
    RewriteOptions r = rewrite;
    r.blocked.high_weights = int8_weights;
    InsertQdq(&candidate, plan, {}, r);
    return score.ScoreDisposable(std::move(candidate));
  };
  // The weights the search may add, in graph order (of the first node that reads each), with that node.
  std::map<std::string, int> first_node;
  for (const auto& q : plan.tensors) {
    if (fixed.count(q.tensor)) continue;
    for (const auto& use : q.uses) {
      auto [it, fresh] = first_node.emplace(q.tensor, use.node);
      if (!fresh) it->second = std::min(it->second, use.node);
    }
  }
  std::vector<std::pair<int, std::string>> in_graph_order;
  for (const auto& [weight, node] : first_node) in_graph_order.emplace_back(node, weight);
  std::sort(in_graph_order.begin(), in_graph_order.end());
  std::vector<std::string> weights;
  std::map<std::string, std::string> first_reader;
  for (const auto& [node, weight] : in_graph_order) {
    first_reader[weight] = fp32.graph().node(node).name();
    weights.push_back(weight);
  }

  const double at_zero = divergence_with(fixed);
  std::vector<std::string> ranking;
  if (at_zero > o.accuracy_budget) {
    log::Info("mixed precision: divergence {:.6g} > {:.6g} with {} INT8 weight(s); ranking {} weight(s) by what "
              "their INT8 copy recovers",
              at_zero, o.accuracy_budget, fixed.size(), weights.size());
    std::vector<std::pair<double, size_t>> recovered;  // (divergence with it in INT8, graph position)
    for (size_t i = 0; i < weights.size(); ++i) {
      std::set<std::string> with = fixed;
      with.insert(weights[i]);
      recovered.emplace_back(divergence_with(with), i);
    }
    std::sort(recovered.begin(), recovered.end());  // least divergence first; ties in graph order
    for (const auto& [d, i] : recovered) ranking.push_back(weights[i]);
  }
  const auto with_top = [&](int64_t k) {
    std::set<std::string> with = fixed;
    with.insert(ranking.begin(), ranking.begin() + k);
    return with;
  };
  AccuracyBudgetReport r = accuracy::SearchCut(static_cast<int64_t>(ranking.size()), o.accuracy_budget, at_zero,
                                               [&](int64_t k) { return divergence_with(with_top(k)); });
  r.metric = score.metric_name();
  r.kept_as = "int8 weights";
  r.evaluations += 1 + static_cast<int64_t>(ranking.size());  // the starting point's and the ranking's
  for (size_t i = 0; i < r.excluded_nodes.size(); ++i) r.excluded_nodes[i] = first_reader.at(ranking[i]);
  if (!r.met) {
    log::Warn("accuracy budget {} ({}) not met even with every ranked weight in INT8 (divergence {:.6g})",
              o.accuracy_budget, r.metric, r.curve.back().second);
  }
  const int64_t chosen = static_cast<int64_t>(r.excluded_nodes.size());
  report->accuracy_budget = r;
  return with_top(chosen);
}

}  // namespace ptqkit
