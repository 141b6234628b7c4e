// The accuracy-budget search of a quantize run (--accuracy_budget; the cut search itself is
// accuracy/accuracy_budget.h): when the fully quantized model misses the budget, one node
// sensitivity scan ranks the quantized nodes, then candidates with the top k of the ranking in
// float are built and scored until the fewest that meet the budget are found.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <utility>
#include <vector>

#include "pipeline/candidate_models.h"
#include "ptqkit/quantize.h"
#include "runtime/prepared_model.h"

namespace ptqkit {

// `quantized_nodes`: (node, op type) of the run's full plan, the only nodes the search may keep in
// float. Fills report->accuracy_budget; returns the nodes to keep in float.
// `model` is the run's prepared FP32 model (smoothed when the run smooths): the ranking scan runs on
// it and the candidates are built from it. `ranking`: an order measured already (most sensitive
// first; --mixed_precision's), used instead of a scan; null: scan when the budget is missed.
std::vector<std::string> SearchAccuracyBudget(const QuantizeOptions& o, const PreparedModel& model,
                                              const CandidateBuilder& build, CandidateScorer& score,
                                              const std::vector<std::pair<std::string, std::string>>& quantized_nodes,
                                              QuantizeReport* report,
                                              const std::vector<std::string>* ranking = nullptr);

// The node scan that ranks a run's quantized nodes (`quantized_nodes`, as above) in `precision`:
// (node, score) most sensitive first, scored by the budget's metric (kl_div for top1) on the
// run's calibration (its data and resolved method: report->calibration_method).
std::vector<std::pair<std::string, double>> RankQuantizedNodes(
    const QuantizeOptions& o, const PreparedModel& model, const std::string& precision,
    const std::vector<std::pair<std::string, std::string>>& quantized_nodes, const QuantizeReport& report);

}  // namespace ptqkit
