// --mixed_precision int8,fp8: each quantized node in the activation format that costs it least.
// INT8 and FP8 move the same bytes and run at the same tensor-core rate on the GPUs that have both
// (Ada, Hopper, Blackwell: TensorRT builds one engine from both kinds of Q/DQ), so neither is
// cheaper: each node takes the one whose node sensitivity scan scores it lower (INT8 on a tie, the
// format every INT8 runtime has). FP16 (the node kept in float) costs twice the bytes; it is what
// --accuracy_budget adds, over the ranking of each node's chosen score. Both scans reuse the run's
// calibration data and method.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ptqkit/quantize.h"
#include "runtime/prepared_model.h"

namespace ptqkit {

struct FormatChoice {
  std::set<std::string> second_format_nodes;  // the nodes in the run's second format
  std::vector<std::string> ranking;           // by the chosen format's score, most sensitive first
  std::vector<QuantizeReport::NodeFormat> nodes;  // the report's list, in `ranking` order
};

// The run's format and the second one of --mixed_precision ("int8,fp8" in either order).
// Throws ptqkit::Error naming the option when `mixed_precision` is not such a pair including `mode`.
std::string SecondActivationFormat(const std::string& mixed_precision, std::string_view mode);

// `quantized_nodes`: (node, op type) of the run's plan that a node scan can probe (main graph). Two
// node scans (one per format); none when `quantized_nodes` is empty.
FormatChoice ChooseNodeFormats(const QuantizeOptions& o, const PreparedModel& model, const std::string& second,
                               const std::vector<std::pair<std::string, std::string>>& quantized_nodes,
                               const QuantizeReport& report);

// The divergence on the held-out samples of the run's candidate with `nodes` in the second format.
using CandidateDivergence = std::function<double(const std::set<std::string>& nodes)>;

// Node scores are measured one node at a time, and a mix of choices each good alone can add up
// worse than one format throughout (PP-OCRv4 rec: a line lost that pure INT8 keeps). So `first`
// throughout, `second` throughout (`all_nodes`: every quantized node, control-flow branches
// included) and, when any node was scored, the per-node mix are scored by `divergence`; the lowest
// is kept (the earlier candidate on a tie), `choice` rewritten to it, `scored` given every
// (candidate, divergence).
void KeepTheBestFormatCandidate(FormatChoice* choice, const std::string& first, const std::string& second,
                                const std::set<std::string>& all_nodes, const CandidateDivergence& divergence,
                                std::vector<std::pair<std::string, double>>* scored);

}  // namespace ptqkit
