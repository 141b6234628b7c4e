// MergeProbes: several probe sub-models (BuildProbeSubmodel) as one model, so that one ONNX
// Runtime session and one Run per batch evaluate them all. Per-probe session start-up and per-call
// overhead is what dominates a scan of a small model; merging removes it.
//
// Each probe's own tensors, nodes and new initializers (scales, zero points) get the prefix
// "probe<k>/"; boundary inputs and the original model's initializers keep their names and are
// shared. Pure function.
#pragma once

#include <onnx/onnx_pb.h>

#include <set>
#include <string>
#include <vector>

namespace ptqkit {

struct MergedProbes {
  onnx::ModelProto model;
  // outputs[k][j]: name in the merged model of probe k's j-th graph output (sub-model order).
  std::vector<std::vector<std::string>> outputs;
};

// REQUIRES: every sub-model has the same opset imports and IR version; `shared_initializers` are
// initializer names of the original model (identical in every sub-model that carries them).
MergedProbes MergeProbes(const std::vector<onnx::ModelProto>& subs, const std::set<std::string>& shared_initializers);

}  // namespace ptqkit
