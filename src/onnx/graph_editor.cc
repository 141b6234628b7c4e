#include "onnx/graph_editor.h"

namespace ptqkit {

GraphEditor::GraphEditor(onnx::GraphProto* graph, const std::set<std::string>* reserved)
    : graph_(graph), before_(static_cast<size_t>(graph->node_size())) {
  for (const auto& t : graph->initializer()) names_.insert(t.name());
  for (const auto& v : graph->input()) names_.insert(v.name());
  for (const auto& n : graph->node()) {
    names_.insert(n.name());
    for (const auto& o : n.output()) names_.insert(o);
  }
  if (reserved) names_.insert(reserved->begin(), reserved->end());
}

std::string GraphEditor::Fresh(const std::string& base) {
  std::string name = base;
  for (int k = 1; names_.count(name); ++k) name = base + "_" + std::to_string(k);
  names_.insert(name);
  return name;
}

void GraphEditor::InsertBefore(int index, onnx::NodeProto node) {
  before_[static_cast<size_t>(index)].push_back(std::move(node));
}

void GraphEditor::Splice() {
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (int i = 0; i < graph_->node_size(); ++i) {
    for (auto& n : before_[static_cast<size_t>(i)]) *nodes.Add() = std::move(n);
    before_[static_cast<size_t>(i)].clear();
    *nodes.Add() = std::move(*graph_->mutable_node(i));
  }
  graph_->mutable_node()->Swap(&nodes);
}

}  // namespace ptqkit
