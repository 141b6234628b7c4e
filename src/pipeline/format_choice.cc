#include "pipeline/format_choice.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "base/log.h"
#include "pipeline/accuracy_budget_search.h"
#include "ptqkit/error.h"

namespace ptqkit {
namespace {

// Most sensitive first, by the score of the format each node is written in; names break ties.
void RankByWrittenFormat(FormatChoice* choice) {
  const auto score = [](const QuantizeReport::NodeFormat& f) {
    return f.format == "int8" ? f.int8_score : f.fp8_score;
  };
  std::stable_sort(choice->nodes.begin(), choice->nodes.end(), [&](const auto& x, const auto& y) {
    return score(x) != score(y) ? score(x) > score(y) : x.node < y.node;
  });
  choice->ranking.clear();
  for (const auto& f : choice->nodes) choice->ranking.push_back(f.node);
}

}  // namespace

std::string SecondActivationFormat(const std::string& mixed_precision, std::string_view mode) {
  if (mixed_precision == "int8,fp8" || mixed_precision == "fp8,int8") {
    if (mode == "int8") return "fp8";
    if (mode == "fp8") return "int8";
  }
  throw Error(fmt::format("--mixed_precision '{}' does not apply to --quantize_mode {} (expected int8,fp8 with int8 "
                          "or fp8, or int4,int8 with int4)",
                          mixed_precision, mode));
}

FormatChoice ChooseNodeFormats(const QuantizeOptions& o, const PreparedModel& model, const std::string& second,
                               const std::vector<std::pair<std::string, std::string>>& quantized_nodes,
                               const QuantizeReport& report) {
  const std::string& first = o.quantize_mode;
  FormatChoice choice;
  if (quantized_nodes.empty()) return choice;
  log::Info("--mixed_precision: scoring every quantized node in {} and in {} (two node sensitivity scans)", first,
            second);
  std::map<std::string, double> first_scores, second_scores;
  for (const auto& [node, score] : RankQuantizedNodes(o, model, first, quantized_nodes, report)) {
    first_scores[node] = score;
  }
  for (const auto& [node, score] : RankQuantizedNodes(o, model, second, quantized_nodes, report)) {
    second_scores[node] = score;
  }
  for (const auto& [node, op] : quantized_nodes) {
    const auto a = first_scores.find(node), b = second_scores.find(node);
    if (a == first_scores.end() || b == second_scores.end()) continue;  // not probed: stays in the run's format
    // INT8 wins a tie: every INT8 runtime runs it.
    const bool int8_first = first == "int8";
    const bool take_second = int8_first ? b->second < a->second : b->second <= a->second;
    if (take_second) choice.second_format_nodes.insert(node);
    QuantizeReport::NodeFormat f;
    f.node = node;
    f.format = take_second ? second : first;
    f.int8_score = int8_first ? a->second : b->second;
    f.fp8_score = int8_first ? b->second : a->second;
    choice.nodes.push_back(std::move(f));
  }
  RankByWrittenFormat(&choice);
  log::Info("--mixed_precision: {} of {} node(s) in {}", choice.second_format_nodes.size(), choice.nodes.size(),
            second);
  return choice;
}

void KeepTheBestFormatCandidate(FormatChoice* choice, const std::string& first, const std::string& second,
                                const std::set<std::string>& all_nodes, const CandidateDivergence& divergence,
                                std::vector<std::pair<std::string, double>>* scored) {
  std::vector<std::pair<std::string, std::set<std::string>>> candidates = {{first, {}}, {second, all_nodes}};
  if (!choice->nodes.empty()) {
    candidates.emplace_back(first + "," + second + " per node", choice->second_format_nodes);
  }
  double best = 0.0;
  size_t best_k = 0;
  std::vector<std::string> shown;
  for (size_t k = 0; k < candidates.size(); ++k) {
    const double d = divergence(candidates[k].second);
    scored->emplace_back(candidates[k].first, d);
    shown.push_back(fmt::format("{} {:.4g}", candidates[k].first, d));
    if (k == 0 || d < best) best = d, best_k = k;
  }
  log::Info("--mixed_precision: held-out divergence {}; kept {}", fmt::join(shown, ", "), candidates[best_k].first);
  if (best_k == 2) return;
  // One format throughout: the budget walks that format's scores (where there are any).
  choice->second_format_nodes = candidates[best_k].second;
  for (auto& f : choice->nodes) f.format = best_k == 0 ? first : second;
  RankByWrittenFormat(choice);
}

}  // namespace ptqkit
