#include "onnx/subgraphs.h"

#include <fmt/format.h>

#include "onnx/op_traits.h"

namespace ptqkit::onnxio {
namespace {

void Walk(onnx::GraphProto* graph, int self, const std::string& path, std::vector<GraphScope>* out) {
  for (int i = 0; i < graph->node_size(); ++i) {
    auto* node = graph->mutable_node(i);
    for (auto& attr : *node->mutable_attribute()) {
      if (!attr.has_g()) continue;
      const std::string label = node->name().empty() ? node->op_type() : node->name();
      GraphScope scope{attr.mutable_g(), self, i, attr.name(), (path.empty() ? "" : path + "/") + label + "/" + attr.name()};
      out->push_back(scope);
      Walk(scope.graph, static_cast<int>(out->size()) - 1, scope.path, out);
    }
  }
}

void AddNames(const onnx::GraphProto& g, std::set<std::string>* names) {
  for (const auto& t : g.initializer()) names->insert(t.name());
  for (const auto& v : g.input()) names->insert(v.name());
  for (const auto& v : g.output()) names->insert(v.name());
  for (const auto& v : g.value_info()) names->insert(v.name());
  for (const auto& n : g.node()) {
    names->insert(n.name());
    for (const auto& o : n.output()) names->insert(o);
    for (const auto& a : n.attribute()) {
      if (a.has_g()) AddNames(a.g(), names);
      for (const auto& sg : a.graphs()) AddNames(sg, names);
    }
  }
}

std::string Fresh(const std::string& base, std::set<std::string>* names) {
  std::string name = base;
  for (int k = 1; names->count(name); ++k) name = fmt::format("{}_{}", base, k);
  names->insert(name);
  return name;
}

void AddOutput(onnx::GraphProto* g, const std::string& name, int32_t elem_type) {
  auto* v = g->add_output();
  v->set_name(name);
  v->mutable_type()->mutable_tensor_type()->set_elem_type(elem_type);
}

// An If's branches must yield the same number of outputs: the branch that does not compute the
// exposed tensor yields an empty one of the same element type (its statistics then gain nothing).
void AddEmptyOutput(onnx::GraphProto* g, int32_t elem_type, std::set<std::string>* names) {
  const std::string out = Fresh("ptqkit_not_computed_here", names);
  auto* n = g->add_node();
  n->set_op_type("Constant");
  n->set_name(Fresh("ptqkit_not_computed_here_Constant", names));
  n->add_output(out);
  auto* attr = n->add_attribute();
  attr->set_name("value");
  attr->set_type(onnx::AttributeProto::TENSOR);
  attr->mutable_t()->set_data_type(elem_type);
  attr->mutable_t()->add_dims(0);
  AddOutput(g, out, elem_type);
}

void AppendIntToListAttribute(onnx::NodeProto* node, const std::string& name, int64_t value) {
  for (auto& attr : *node->mutable_attribute()) {
    if (attr.name() == name) attr.add_ints(value);
  }
}

}  // namespace

std::vector<GraphScope> AllGraphs(onnx::GraphProto* main) {
  std::vector<GraphScope> scopes{GraphScope{main, -1, -1, "", ""}};
  Walk(main, 0, "", &scopes);
  return scopes;
}

void AddNodeReads(const onnx::GraphProto& graph, std::set<std::string>* reads) {
  for (const auto& n : graph.node()) {
    for (const auto& i : n.input()) reads->insert(i);
    for (const auto& a : n.attribute()) {
      if (a.has_g()) AddNodeReads(a.g(), reads);
      for (const auto& sg : a.graphs()) AddNodeReads(sg, reads);
    }
  }
}

bool HasSubgraphs(const onnx::GraphProto& main) {
  for (const auto& n : main.node()) {
    for (const auto& attr : n.attribute()) {
      if (attr.has_g()) return true;
    }
  }
  return false;
}

std::set<std::string> AllNames(const onnx::GraphProto& main) {
  std::set<std::string> names;
  AddNames(main, &names);
  return names;
}

std::map<std::string, int32_t> DeclaredElemTypes(const onnx::GraphProto& main) {
  std::map<std::string, int32_t> types;
  const auto add = [&](const onnx::ValueInfoProto& v) {
    if (v.type().has_tensor_type() && v.type().tensor_type().elem_type() != 0) {
      types.emplace(v.name(), v.type().tensor_type().elem_type());
    }
  };
  std::vector<const onnx::GraphProto*> todo{&main};
  while (!todo.empty()) {
    const onnx::GraphProto* g = todo.back();
    todo.pop_back();
    for (const auto& v : g->input()) add(v);
    for (const auto& v : g->output()) add(v);
    for (const auto& v : g->value_info()) add(v);
    for (const auto& n : g->node()) {
      for (const auto& attr : n.attribute()) {
        if (attr.has_g()) todo.push_back(&attr.g());
      }
    }
  }
  return types;
}

std::map<std::string, std::string> ExposeToMainGraph(onnx::ModelProto* model, const std::vector<std::string>& tensors,
                                                     const std::map<std::string, int32_t>& elem_types) {
  std::vector<GraphScope> scopes = AllGraphs(model->mutable_graph());
  std::map<std::string, std::string> exposed;
  if (scopes.size() == 1) return exposed;

  // Where each tensor is defined. Loop/Scan body inputs are defined by their body.
  std::map<std::string, int> defined_in;
  for (size_t s = 1; s < scopes.size(); ++s) {
    for (const auto& v : scopes[s].graph->input()) defined_in.emplace(v.name(), static_cast<int>(s));
    for (const auto& n : scopes[s].graph->node()) {
      for (const auto& o : n.output()) {
        if (!o.empty()) defined_in.emplace(o, static_cast<int>(s));
      }
    }
  }
  std::set<std::string> names = AllNames(model->graph());

  for (const auto& tensor : tensors) {
    auto where = defined_in.find(tensor);
    if (where == defined_in.end() || exposed.count(tensor)) continue;
    const auto type_it = elem_types.find(tensor);
    const int32_t elem_type = type_it == elem_types.end() ? onnx::TensorProto::FLOAT : type_it->second;
    std::string name = tensor;
    for (int s = where->second; s != 0; s = scopes[s].parent) {
      onnx::GraphProto* g = scopes[s].graph;
      bool is_input = false;
      for (const auto& v : g->input()) is_input |= v.name() == name;
      if (is_input) {  // a graph output that is also its input is not allowed everywhere: copy it
        auto* id = g->add_node();
        id->set_op_type("Identity");
        id->set_name(Fresh(name + "_ptqkit_exposed_Identity", &names));
        id->add_input(name);
        name = Fresh(name + "_ptqkit_exposed", &names);
        id->add_output(name);
      }
      AddOutput(g, name, elem_type);
      onnx::NodeProto* owner = scopes[scopes[s].parent].graph->mutable_node(scopes[s].owner_node);
      const SubgraphOutputs outputs = TraitsOf(*owner).subgraph_outputs;
      if (outputs == SubgraphOutputs::kBranchOutputs) {
        const std::string other = scopes[s].attribute == "then_branch" ? "else_branch" : "then_branch";
        for (auto& attr : *owner->mutable_attribute()) {
          if (attr.name() == other && attr.has_g()) AddEmptyOutput(attr.mutable_g(), elem_type, &names);
        }
      } else if (outputs == SubgraphOutputs::kScanOutputs) {  // kLoopOutputs need nothing more
        AppendIntToListAttribute(owner, "scan_output_axes", 0);
        AppendIntToListAttribute(owner, "scan_output_directions", 0);
      }
      name = Fresh(tensor + "_ptqkit_exposed", &names);
      owner->add_output(name);
    }
    exposed[tensor] = name;
  }
  return exposed;
}

}  // namespace ptqkit::onnxio
