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
// it and the candidates are built from it.
std::vector<std::string> SearchAccuracyBudget(const QuantizeOptions& o, const PreparedModel& model,
                                              const CandidateBuilder& build, CandidateScorer& score,
                                              const std::vector<std::pair<std::string, std::string>>& quantized_nodes,
                                              QuantizeReport* report);

}  // namespace ptqkit
