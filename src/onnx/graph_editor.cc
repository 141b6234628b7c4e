#include "onnx/graph_editor.h"

#include <algorithm>

#include "onnx/op_traits.h"
#include "onnx/subgraphs.h"

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

void GraphEditor::AddInitializer(const std::string& name, int32_t type, const std::vector<int64_t>& dims,
                                 std::string bytes) {
  auto* t = graph_->add_initializer();
  t->set_name(name);
  t->set_data_type(type);
  for (auto d : dims) t->add_dims(d);
  t->set_raw_data(std::move(bytes));
}

onnx::NodeProto GraphEditor::MakeNode(const std::string& op_type, const std::string& name,
                                      const std::vector<std::string>& inputs, const std::string& output,
                                      const std::vector<std::pair<std::string, int64_t>>& int_attributes) {
  onnx::NodeProto n;
  n.set_op_type(op_type);
  n.set_name(name);
  for (const auto& i : inputs) n.add_input(i);
  n.add_output(output);
  for (const auto& [key, value] : int_attributes) {
    auto* a = n.add_attribute();
    a->set_name(key);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(value);
  }
  return n;
}

void GraphEditor::RemoveUnread(const std::set<std::string>& replaced) {
  std::set<std::string> used;
  onnxio::AddNodeReads(*graph_, &used);
  for (const auto& o : graph_->output()) used.insert(o.name());
  for (const auto& i : graph_->input()) used.insert(i.name());  // never removed: the caller may feed it
  std::set<std::string> dead;
  for (const auto& name : replaced) {
    if (!used.count(name)) dead.insert(name);
  }
  if (dead.empty()) return;
  const auto is_dead = [&](const std::string& name) { return dead.count(name) > 0; };
  auto* inits = graph_->mutable_initializer();
  inits->erase(std::remove_if(inits->begin(), inits->end(), [&](const onnx::TensorProto& t) { return is_dead(t.name()); }),
               inits->end());
  auto* nodes = graph_->mutable_node();
  nodes->erase(std::remove_if(nodes->begin(), nodes->end(),
                              [&](const onnx::NodeProto& n) {
                                return HasRole(n, OpRole::kConstant) && n.output_size() == 1 && is_dead(n.output(0));
                              }),
               nodes->end());
  auto* infos = graph_->mutable_value_info();
  infos->erase(std::remove_if(infos->begin(), infos->end(), [&](const onnx::ValueInfoProto& v) { return is_dead(v.name()); }),
               infos->end());
}

std::string WhyNotReplaceable(const GraphIndex& graph, const std::string& tensor) {
  if (graph.IsGraphInput(tensor)) return "weight is also a graph input (a caller may override it)";
  return "";
}

}  // namespace ptqkit
