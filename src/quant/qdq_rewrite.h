// QdqRewriter: turns a Placement plus scales into graph edits — a QuantizeLinear/DequantizeLinear
// pair per planned tensor (one pair shared by all its uses), consumers rewired to the DQ output.
//
// Activations: per-tensor scale amax/127, zero point 0 (symmetric INT8).
// Weights: per-channel scales from the weight's own absmax; kept as FP32 initializer + Q -> DQ, or
// with dq_only stored as INT8 initializer + DQ (the FP32 copy is dropped when nothing else reads it).
// Bias inputs are never touched. New nodes are placed just before their first consumer, so the
// graph stays topologically sorted; new names never collide with existing ones.
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <string>

#include "quant/placement.h"

namespace ptqkit {

struct RewriteOptions {
  bool dq_only = false;
};

struct RewriteStats {
  int qdq_pairs = 0;        // Q/DQ (or DQ-only) pairs inserted
  int weight_tensors = 0;   // of which on weights
};

// REQUIRES: `plan` was made from a GraphIndex over model->graph() and the graph has not changed
// since; `activation_amax` has an entry for every activation tensor of the plan (after scale
// groups were merged). Throws ptqkit::Error naming a tensor whose amax is missing.
RewriteStats InsertQdq(onnx::ModelProto* model, const Placement& plan,
                       const std::map<std::string, float>& activation_amax, const RewriteOptions& options);

}  // namespace ptqkit
