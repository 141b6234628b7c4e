// Probes: the targets of a sensitivity scan and, for each, the placement that quantizes that
// target alone (op_type granularity: every node of the type, as --op_types_to_quantize does; node
// granularity: that node's inputs). Plans are made from the graph only, before calibration.
// Pure functions of the graph and the options.
#pragma once

#include <string>
#include <vector>

#include "onnx/graph_index.h"
#include "ptqkit/sensitivity.h"
#include "quant/formats/formats.h"
#include "quant/placement/placement.h"
#include "scan/probe_cut.h"

namespace ptqkit {

struct Probe {
  std::string target;
  Placement plan;
  ProbeCut cut;  // filled once the plan is final (after non-float tensors are dropped)
};

// The format of --target_precision (an activation format). Throws ptqkit::Error naming the
// accepted precisions otherwise.
const QuantFormat& TargetFormat(const SensitivityOptions& options);

// One probe per target in scope, in graph order (op types: sorted by name). Warns about scope
// entries the model has no node of.
std::vector<Probe> MakeProbes(const GraphIndex& graph, const SensitivityOptions& options);

}  // namespace ptqkit
