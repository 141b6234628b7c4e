// ModelPlacement: the placement rules applied to every graph of a model — the main graph and each
// control-flow subgraph (If branches, Loop/Scan bodies) — so that networks exported inside control
// flow are quantized like any other. One Placement per graph; the plans are independent because a
// subgraph only reads outer tensors, it never rewires them.
//
// Typical use: build it on the prepared model, calibrate ActivationTensors(), drop the tensors
// calibration could not observe, then Rewrite() with the ranges.
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "onnx/graph_index.h"
#include "onnx/subgraphs.h"
#include "quant/placement/placement.h"
#include "quant/rewrite/qdq_rewrite.h"

namespace ptqkit {

struct ScopePlacement {
  onnxio::GraphScope scope;
  std::unique_ptr<GraphIndex> index;  // over scope.graph, with the enclosing scope's index as outer
  Placement plan;
};

class ModelPlacement {
 public:
  // Warns once per selector that matches no node in any graph. REQUIRES: `model` outlives this
  // object and is only edited through Rewrite().
  ModelPlacement(onnx::ModelProto* model, const PlacementOptions& options);

  const std::vector<ScopePlacement>& scopes() const { return scopes_; }
  // Activation tensors of every plan, each once, main graph first.
  std::vector<std::string> ActivationTensors() const;
  // Removes an activation tensor from every plan that has it.
  void DropTensor(const std::string& tensor, const std::string& reason);
  // --mixed_precision int8,fp8: every tensor a node named in `nodes` reads (its activation inputs
  // and weight) is quantized in `format`, and so is the rest of its scale group (one scale, one
  // grid). A tensor that nodes of both formats read takes `format`: the higher-precision choice
  // is the one a measured node asked for.
  void UseFormatFor(const std::set<std::string>& nodes, const QuantFormat* format);
  // The format of each tensor that is not the run's (UseFormatFor), every plan.
  std::map<std::string, const QuantFormat*> TensorFormats() const;
  // Ranges after scale groups are merged, for every plan (see PlanRanges).
  std::map<std::string, float> Ranges(const std::map<std::string, float>& tensor_amax) const;
  // Inserts the Q/DQ nodes in every graph; the indexes are invalid afterwards.
  RewriteStats Rewrite(const std::map<std::string, float>& activation_amax, RewriteOptions options);

  // For reports: op type -> quantized nodes, and (node name, reason) of candidates left in float.
  std::map<std::string, int> QuantizedByOpType() const;
  std::vector<std::pair<std::string, std::string>> LeftInFloat() const;
  // (node name, op type) of every node with Q/DQ inputs, graph order, main graph first (or only).
  std::vector<std::pair<std::string, std::string>> QuantizedNodes(bool main_graph_only = false) const;

 private:
  onnx::ModelProto* model_;
  std::vector<ScopePlacement> scopes_;
};

}  // namespace ptqkit
