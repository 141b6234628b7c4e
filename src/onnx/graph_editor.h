// GraphEditor: the bookkeeping every graph rewrite needs — names that never collide with existing
// tensors, nodes or initializers, and new nodes queued "before node i" so that, once spliced in,
// the graph stays topologically sorted without a sort. Used by the Q/DQ and INT4 rewriters.
// Owns nothing but its queues; the graph must outlive it. Not thread-safe.
#pragma once

#include <onnx/onnx_pb.h>

#include <set>
#include <string>
#include <vector>

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

 private:
  onnx::GraphProto* graph_;
  std::set<std::string> names_;
  std::vector<std::vector<onnx::NodeProto>> before_;
};

}  // namespace ptqkit
