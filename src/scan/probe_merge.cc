#include "scan/probe_merge.h"

#include <fmt/format.h>

#include <map>

namespace ptqkit {

MergedProbes MergeProbes(const std::vector<onnx::ModelProto>& subs, const std::set<std::string>& shared_initializers) {
  MergedProbes merged;
  if (subs.empty()) return merged;
  onnx::ModelProto& m = merged.model;
  m.set_ir_version(subs[0].ir_version());
  *m.mutable_opset_import() = subs[0].opset_import();
  *m.mutable_functions() = subs[0].functions();
  onnx::GraphProto* graph = m.mutable_graph();
  graph->set_name("probes");
  std::set<std::string> inputs, initializers;
  for (size_t k = 0; k < subs.size(); ++k) {
    const onnx::GraphProto& g = subs[k].graph();
    const std::string prefix = fmt::format("probe{}/", k);
    std::set<std::string> keep;  // names shared between probes
    for (const auto& v : g.input()) keep.insert(v.name());
    for (const auto& t : g.initializer())
      if (shared_initializers.count(t.name())) keep.insert(t.name());
    const auto rename = [&](const std::string& name) { return name.empty() || keep.count(name) ? name : prefix + name; };

    for (const auto& v : g.input())
      if (inputs.insert(v.name()).second) *graph->add_input() = v;
    for (const auto& t : g.initializer()) {
      const std::string name = rename(t.name());
      if (!initializers.insert(name).second) continue;
      auto* copy = graph->add_initializer();
      *copy = t;
      copy->set_name(name);
    }
    for (const auto& n : g.node()) {
      auto* copy = graph->add_node();
      *copy = n;
      copy->set_name(prefix + n.name());
      for (auto& in : *copy->mutable_input()) in = rename(in);
      for (auto& out : *copy->mutable_output()) out = rename(out);
    }
    merged.outputs.emplace_back();
    for (const auto& o : g.output()) {
      auto* copy = graph->add_output();
      *copy = o;
      copy->set_name(rename(o.name()));
      merged.outputs.back().push_back(copy->name());
    }
  }
  return merged;
}

}  // namespace ptqkit
