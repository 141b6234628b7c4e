#include "pipeline/format_choice.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "base/log.h"
#include "pipeline/accuracy_budget_search.h"
#include "ptqkit/error.h"

namespace ptqkit {

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
  std::vector<std::pair<double, QuantizeReport::NodeFormat>> chosen;
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
    chosen.emplace_back(std::min(a->second, b->second), f);
  }
  // Most sensitive first, by the score of the format each node got; names break ties.
  std::stable_sort(chosen.begin(), chosen.end(), [](const auto& x, const auto& y) {
    return x.first != y.first ? x.first > y.first : x.second.node < y.second.node;
  });
  for (auto& [score, f] : chosen) {
    choice.ranking.push_back(f.node);
    choice.nodes.push_back(std::move(f));
  }
  log::Info("--mixed_precision: {} of {} node(s) in {}", choice.second_format_nodes.size(), choice.nodes.size(),
            second);
  return choice;
}

}  // namespace ptqkit
