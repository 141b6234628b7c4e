#include "scan/probe_cut.h"

#include <fmt/format.h>

#include <deque>

#include "onnx/session_model.h"
#include "onnx/weight_stash.h"
#include "ptqkit/error.h"

namespace ptqkit {

ProbeCut ComputeProbeCut(const GraphIndex& g, const Placement& plan) {
  ProbeCut cut;
  std::deque<int> todo;
  for (const auto& t : plan.tensors)
    for (const auto& u : t.uses)
      if (cut.affected.insert(u.node).second) todo.push_back(u.node);
  while (!todo.empty()) {
    const int n = todo.front();
    todo.pop_front();
    for (const auto& out : g.node(n).output()) {
      for (const auto& use : g.Consumers(out)) {
        if (cut.affected.insert(use.node).second) todo.push_back(use.node);
      }
    }
  }
  std::set<std::string> boundary;
  for (int n : cut.affected) {
    for (const auto& in : g.node(n).input()) {
      if (in.empty() || g.IsConstant(in)) continue;
      const int p = g.Producer(in);
      if (p >= 0 && cut.affected.count(p)) continue;
      boundary.insert(in);
    }
  }
  cut.boundary.assign(boundary.begin(), boundary.end());
  for (const auto& o : g.graph().output()) {
    const int p = g.Producer(o.name());
    if (p >= 0 && cut.affected.count(p)) cut.outputs.push_back(o.name());
  }
  return cut;
}

void AddPlanWeights(const Placement& plan, const onnx::GraphProto& original, onnx::ModelProto* model,
                    bool placeholders) {
  std::set<std::string> weights;
  for (const auto& t : plan.tensors)
    if (t.is_weight) weights.insert(t.tensor);
  for (const auto& t : original.initializer()) {
    if (!weights.count(t.name())) continue;
    const bool large = t.has_raw_data() && t.raw_data().size() > onnxio::kDefaultViewBytes;
    *model->mutable_graph()->add_initializer() = placeholders && large ? onnxio::WeightPlaceholder(t) : t;
  }
}

onnx::ModelProto BuildProbeSubmodel(const onnx::ModelProto& rewritten, const onnx::GraphProto& original,
                                    const ProbeCut& cut, const std::map<std::string, BoundaryType>& types) {
  const onnx::GraphProto& full = rewritten.graph();
  GraphIndex g(full);
  const std::set<std::string> boundary(cut.boundary.begin(), cut.boundary.end());
  // Backward slice from the outputs, stopping at boundary tensors and constants.
  std::set<int> keep;
  std::set<std::string> used_initializers;
  std::deque<std::string> todo(cut.outputs.begin(), cut.outputs.end());
  std::set<std::string> seen(todo.begin(), todo.end());
  while (!todo.empty()) {
    const std::string t = todo.front();
    todo.pop_front();
    if (boundary.count(t)) continue;
    const int p = g.Producer(t);
    if (p < 0) {
      used_initializers.insert(t);  // an initializer (graph inputs are all on the boundary)
      continue;
    }
    if (!keep.insert(p).second) continue;
    for (const auto& in : g.node(p).input()) {
      if (!in.empty() && seen.insert(in).second) todo.push_back(in);
    }
    // Subgraph attributes (If/Loop) may read outer-scope tensors; keep the whole model then.
    for (const auto& a : g.node(p).attribute()) {
      if (a.has_g() || a.graphs_size() > 0) throw Error("probe sub-model: control flow is not cut");
    }
  }

  onnx::ModelProto sub;
  sub.set_ir_version(rewritten.ir_version());
  *sub.mutable_opset_import() = rewritten.opset_import();
  *sub.mutable_functions() = rewritten.functions();
  onnx::GraphProto* graph = sub.mutable_graph();
  graph->set_name(full.name() + "_probe");
  for (int i = 0; i < full.node_size(); ++i)
    if (keep.count(i)) *graph->add_node() = full.node(i);
  // The model's large weights are not copied: a probe downstream of an early cut reads most of
  // them, and four probes share a session. They become placeholders that the probe's session sees
  // as views of `original` (RunOnReference). A plan weight in `rewritten` is the original's bytes
  // (the probe's Q reads it unchanged), so it is a placeholder too.
  std::set<std::string> large;
  for (const auto& t : original.initializer()) {
    if (t.has_raw_data() && t.raw_data().size() > onnxio::kDefaultViewBytes) large.insert(t.name());
  }
  std::set<std::string> copied;
  for (const auto* source : {&full, &original}) {
    for (const auto& t : source->initializer()) {
      if (!used_initializers.count(t.name()) || !copied.insert(t.name()).second) continue;
      const bool view = large.count(t.name()) && !onnxio::IsStashed(t);  // a placeholder already stays one
      *graph->add_initializer() = view ? onnxio::WeightPlaceholder(t) : t;
    }
  }
  for (const auto& name : cut.boundary) {
    auto it = types.find(name);
    if (it == types.end()) throw Error(fmt::format("probe sub-model: no type for boundary tensor '{}'", name));
    auto* v = graph->add_input();
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(static_cast<int32_t>(it->second.dtype));
    auto* shape = tt->mutable_shape();
    // Unknown dims (no value, no shared dim_param: equal dim_params would tell ONNX Runtime that
    // different inputs have equal sizes).
    for (size_t d = 0; d < it->second.rank; ++d) shape->add_dim();
  }
  for (const auto& o : full.output())
    if (std::find(cut.outputs.begin(), cut.outputs.end(), o.name()) != cut.outputs.end()) *graph->add_output() = o;
  return sub;
}

}  // namespace ptqkit
