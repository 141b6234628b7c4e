// ProbeCut: the part of a model that one sensitivity probe actually changes.
//
// A probe inserts Q/DQ only in front of its target nodes, so every node that is neither a target
// nor downstream of one computes exactly its FP32 value. The scan therefore runs, per probe, only
// the affected sub-graph, fed at its boundary with FP32 activations cached once by the reference
// pass. The probe's outputs are unchanged where the sub-graph does not reach (their metric is 0).
// Pure functions over the graph; no state.
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "onnx/graph_index.h"
#include "ptqkit/tensor.h"
#include "quant/placement/placement.h"

namespace ptqkit {

struct ProbeCut {
  std::set<int> affected;             // target nodes and everything downstream of them
  std::vector<std::string> boundary;  // run-time tensors the affected nodes read from outside (sorted)
  std::vector<std::string> outputs;   // graph outputs produced by affected nodes (graph order)
};

// REQUIRES: `plan` was made on `graph`.
ProbeCut ComputeProbeCut(const GraphIndex& graph, const Placement& plan);

struct BoundaryType {
  DataType dtype = DataType::kFloat;
  size_t rank = 0;
};

// The sub-model computing `cut.outputs` from `cut.boundary`: `rewritten` is the model's graph after
// InsertQdq for the probe's plan. Its initializers may be limited to the ones the rewrite needed
// (the plan's weights and the new scales): any other initializer the sub-graph reads is copied from
// `original`, except the large ones (over onnxio::kDefaultViewBytes), which become WeightPlaceholders
// to be run over `original` (onnxio::MakeSessionModelOver). Boundary tensors become graph
// inputs (typed from `types`, dims unknown). Throws ptqkit::Error if a boundary type is missing.
onnx::ModelProto BuildProbeSubmodel(const onnx::ModelProto& rewritten, const onnx::GraphProto& original,
                                    const ProbeCut& cut, const std::map<std::string, BoundaryType>& types);

// Adds to `model` the initializers of `original` that the plan quantizes as weights.
// With `placeholders`, the large ones (over onnxio::kDefaultViewBytes) are added as WeightPlaceholders
// (the rewrite then reads them through RewriteOptions::weight_source).
void AddPlanWeights(const Placement& plan, const onnx::GraphProto& original, onnx::ModelProto* model,
                    bool placeholders = false);

}  // namespace ptqkit
