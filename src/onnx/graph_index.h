// GraphIndex: read-only lookups over one onnx::GraphProto — who produces a tensor, who consumes
// it, which tensors are constants (initializers or outputs of Constant nodes, which ptqkit
// treats as weights), and which are graph inputs/outputs.
// The index points into the graph it was built from: rebuild it after editing the graph.
// A subgraph's index can be given the index of its enclosing graph: a subgraph reads the outer
// graph's tensors by name, so its constants (weights) may live there.
// Not thread-safe for concurrent rebuilds; concurrent reads are fine.
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ptqkit {

struct TensorUse {
  int node = -1;   // index into graph.node()
  int input = -1;  // which input of that node
};

class GraphIndex {
 public:
  explicit GraphIndex(const onnx::GraphProto& graph, const GraphIndex* outer = nullptr);

  const onnx::GraphProto& graph() const { return *graph_; }
  const onnx::NodeProto& node(int index) const { return graph_->node(index); }
  int num_nodes() const { return graph_->node_size(); }

  // Index of the node that outputs `tensor`, or -1 (graph input, initializer, unknown).
  int Producer(const std::string& tensor) const;
  // Every (node, input) that reads `tensor`, in node order.
  const std::vector<TensorUse>& Consumers(const std::string& tensor) const;
  // The constant value of `tensor`: an initializer, or the `value` attribute of a Constant node,
  // of this graph or (when not defined here) of the enclosing ones. nullptr for anything computed
  // at run time.
  const onnx::TensorProto* Constant(const std::string& tensor) const;
  bool IsConstant(const std::string& tensor) const { return Constant(tensor) != nullptr; }
  bool IsGraphInput(const std::string& tensor) const { return graph_inputs_.count(tensor) > 0; }
  bool IsGraphOutput(const std::string& tensor) const { return graph_outputs_.count(tensor) > 0; }
  // Node index by name, or -1. REQUIRES: node names are unique (AssignNodeNames).
  int FindNode(const std::string& name) const;

 private:
  const onnx::GraphProto* graph_;
  const GraphIndex* outer_;
  std::map<std::string, int> producer_;
  std::map<std::string, std::vector<TensorUse>> consumers_;
  std::map<std::string, const onnx::TensorProto*> constants_;
  std::map<std::string, int> node_by_name_;
  std::set<std::string> graph_inputs_;
  std::set<std::string> graph_outputs_;
};

// Shape of a constant tensor as int64 dims.
std::vector<int64_t> TensorShape(const onnx::TensorProto& tensor);
// Number of elements of a constant tensor (the product of its dims; 1 for a scalar).
int64_t ElementCount(const onnx::TensorProto& tensor);
// Values of a FLOAT / FLOAT16 / DOUBLE constant as float32. Throws ptqkit::Error for other types.
std::vector<float> TensorToFloats(const onnx::TensorProto& tensor);
// Integer attribute `name` of `node`, or `fallback` when absent.
int64_t IntAttribute(const onnx::NodeProto& node, const std::string& name, int64_t fallback);
// Float attribute `name` of `node`, or `fallback` when absent.
float FloatAttribute(const onnx::NodeProto& node, const std::string& name, float fallback);

}  // namespace ptqkit
