// GraphEditor: the graph edits every rewrite needs, in one place with one policy — names that never
// collide with existing tensors, nodes or initializers; new nodes queued "before node i" so that,
// once spliced in, the graph stays topologically sorted without a sort; new initializers and Q/DQ
// nodes; removal of the float originals a rewrite replaced. Used by the Q/DQ and INT4 rewriters.
//
// The replacement policy (WhyNotReplaceable): an initializer that is also a graph input is a
// default value the caller may override by feeding that input, so it is never replaced by a
// quantized copy (nor removed); the node reading it stays float, and the reason is reported.
//
// Owns nothing but its queues; the graph must outlive it. Not thread-safe.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "onnx/graph_index.h"

namespace ptqkit {

class GraphEditor {
 public:
  // `reserved` are names taken outside `graph` (may be null).
  explicit GraphEditor(onnx::GraphProto* graph, const std::set<std::string>* reserved = nullptr);

  // `base`, or `base_1`, `base_2`, ... : the first name not used yet; it is then taken.
  std::string Fresh(const std::string& base);
  // Queues `node` to be placed right before the node now at `index`.
  // REQUIRES: 0 <= index < graph->node_size() at construction.
  void InsertBefore(int index, onnx::NodeProto node);
  // Splices the queued nodes into the graph. Node indices change afterwards.
  void Splice();

  // Adds initializer `name` of ONNX element type `type` (onnx::TensorProto_DataType_*) holding the
  // raw little-endian `bytes`. REQUIRES: `name` came from Fresh().
  void AddInitializer(const std::string& name, int32_t type, const std::vector<int64_t>& dims, std::string bytes);
  // A node of `op_type` with one output and the integer attributes given (in that order).
  static onnx::NodeProto MakeNode(const std::string& op_type, const std::string& name,
                                  const std::vector<std::string>& inputs, const std::string& output,
                                  const std::vector<std::pair<std::string, int64_t>>& int_attributes = {});
  // Removes what is left of the tensors a rewrite replaced: each name in `replaced` that no node
  // reads (at any depth) and no graph output names loses its initializer or Constant node and its
  // value_info. Graph inputs are never removed (see WhyNotReplaceable).
  void RemoveUnread(const std::set<std::string>& replaced);

 private:
  onnx::GraphProto* graph_;
  std::set<std::string> names_;
  std::vector<std::vector<onnx::NodeProto>> before_;
};

// Why the constant `tensor` of `graph` may not be replaced by a quantized copy, or "" when it may
// (the policy above): "weight is also a graph input (a caller may override it)".
std::string WhyNotReplaceable(const GraphIndex& graph, const std::string& tensor);

}  // namespace ptqkit
