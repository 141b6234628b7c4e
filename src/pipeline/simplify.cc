#include "pipeline/simplify.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/log.h"
#include "onnx/onnx_library.h"
#include "onnx/op_traits.h"
#include "ptqkit/error.h"

namespace ptqkit {
namespace {

// Ops whose value is not a function of their inputs, that ptqkit must see as they are, or whose
// result is much larger than their inputs.
const std::set<std::string> kNeverFolded = {
    "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Multinomial", "Bernoulli",
    "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "ConstantOfShape", "Expand", "Tile"};

bool HasSubgraph(const onnx::NodeProto& node) {
  for (const auto& a : node.attribute()) {
    if (a.has_g() || a.graphs_size() > 0) return true;
  }
  return false;
}

// Every name read inside the subgraphs of `node`, at any depth (outer-scope references included).
void CollectSubgraphReads(const onnx::GraphProto& graph, std::set<std::string>* reads) {
  for (const auto& n : graph.node()) {
    for (const auto& in : n.input()) reads->insert(in);
    for (const auto& a : n.attribute()) {
      if (a.has_g()) CollectSubgraphReads(a.g(), reads);
      for (const auto& g : a.graphs()) CollectSubgraphReads(g, reads);
    }
  }
  for (const auto& out : graph.output()) reads->insert(out.name());
}

std::set<std::string> ReadsOf(const onnx::NodeProto& node) {
  std::set<std::string> reads(node.input().begin(), node.input().end());
  for (const auto& a : node.attribute()) {
    if (a.has_g()) CollectSubgraphReads(a.g(), &reads);
    for (const auto& g : a.graphs()) CollectSubgraphReads(g, &reads);
  }
  return reads;
}

// Fixed dims of each tensor whose shape inference knows them all.
std::map<std::string, std::vector<int64_t>> StaticShapes(onnx::ModelProto* model) {
  std::map<std::string, std::vector<int64_t>> shapes;
  const onnx::ModelProto inferred = onnxio::InferShapes(model);
  const auto note = [&](const onnx::ValueInfoProto& v) {
    if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return;
    std::vector<int64_t> dims;
    for (const auto& d : v.type().tensor_type().shape().dim()) {
      if (!d.has_dim_value()) return;
      dims.push_back(d.dim_value());
    }
    shapes[v.name()] = dims;
  };
  for (const auto& v : inferred.graph().value_info()) note(v);
  for (const auto& v : inferred.graph().input()) note(v);
  return shapes;
}

onnx::TensorProto Int64Tensor(const std::string& name, const std::vector<int64_t>& values, bool scalar) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::INT64);
  if (!scalar) t.add_dims(static_cast<int64_t>(values.size()));
  for (int64_t v : values) t.add_int64_data(v);
  return t;
}

// Shape (with its start/end, opset 15) or Size of a static tensor, computed from the dims.
bool FoldShapeOp(const onnx::NodeProto& node, const std::map<std::string, std::vector<int64_t>>& shapes,
                 onnx::TensorProto* out) {
  if (!HasRole(node, OpRole::kShape) || node.input_size() != 1) return false;
  auto it = shapes.find(node.input(0));
  if (it == shapes.end()) return false;
  const std::vector<int64_t>& dims = it->second;
  if (node.op_type() == "Size") {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    *out = Int64Tensor(node.output(0), {n}, /*scalar=*/true);
    return true;
  }
  const auto rank = static_cast<int64_t>(dims.size());
  int64_t start = 0, end = rank;
  for (const auto& a : node.attribute()) {
    if (a.name() == "start") start = a.i();
    if (a.name() == "end") end = a.i();
  }
  const auto clamp = [&](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank); };
  start = clamp(start);
  end = clamp(end);
  *out = Int64Tensor(node.output(0), std::vector<int64_t>(dims.begin() + start, dims.begin() + std::max(start, end)),
                     /*scalar=*/false);
  return true;
}

// The nodes that fold: the ones computed from dims directly (their values), and the ones ONNX
// Runtime evaluates (copied into `model`, a graph of their own).
struct FoldPlan {
  std::vector<bool> folded;
  std::vector<onnx::TensorProto> from_dims;
  onnx::ModelProto model;
  std::set<std::string> evaluated;  // outputs of the nodes ONNX Runtime evaluates
};

FoldPlan PlanFolds(const onnx::ModelProto& source, const std::map<std::string, std::vector<int64_t>>& shapes,
                   const std::set<std::string>& graph_outputs, std::set<std::string> constants) {
  const onnx::GraphProto& graph = source.graph();
  FoldPlan plan;
  plan.folded.assign(graph.node_size(), false);
  *plan.model.mutable_opset_import() = source.opset_import();
  plan.model.set_ir_version(source.ir_version());
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto& node = graph.node(i);
    bool produces_output = false;
    for (const auto& out : node.output()) produces_output |= graph_outputs.count(out) > 0;
    const bool default_domain = node.domain().empty() || node.domain() == "ai.onnx";
    if (produces_output || !default_domain || HasSubgraph(node) || kNeverFolded.count(node.op_type())) continue;
    onnx::TensorProto dims_value;
    if (FoldShapeOp(node, shapes, &dims_value)) {
      plan.folded[i] = true;
      constants.insert(node.output(0));
      plan.from_dims.push_back(dims_value);
      *plan.model.mutable_graph()->add_initializer() = dims_value;
      continue;
    }
    bool all_constant = true;
    for (const auto& in : node.input()) all_constant &= constants.count(in) > 0;
    if (!all_constant) continue;
    plan.folded[i] = true;
    *plan.model.mutable_graph()->add_node() = node;
    for (const auto& out : node.output()) {
      constants.insert(out);
      plan.evaluated.insert(out);
    }
  }
  return plan;
}

// The values of `wanted` (outputs of the folded nodes), computed by ONNX Runtime.
std::vector<onnx::TensorProto> EvaluateFolds(FoldPlan* plan, const onnx::GraphProto& graph,
                                             const std::vector<std::string>& wanted, const RuntimeOptions& runtime) {
  std::vector<onnx::TensorProto> results;
  if (wanted.empty()) return results;
  onnx::GraphProto* fold_graph = plan->model.mutable_graph();
  std::set<std::string> fold_reads;
  for (const auto& n : fold_graph->node()) fold_reads.insert(n.input().begin(), n.input().end());
  for (const auto& init : graph.initializer()) {
    if (fold_reads.count(init.name())) *fold_graph->add_initializer() = init;
  }
  for (const auto& name : wanted) fold_graph->add_output()->set_name(name);
  fold_graph->set_name("ptqkit_simplify");
  RuntimeOptions cpu = runtime;
  cpu.basic_optimizations_only = true;
  InferenceSession session(plan->model.SerializeAsString(), cpu);
  const std::vector<HostTensor> values = session.Run(Batch{}, wanted);
  for (size_t k = 0; k < wanted.size(); ++k) {
    if (values[k].dtype == DataType::kString || values[k].dtype == DataType::kUndefined) {
      throw Error(fmt::format("--simplify: '{}' folds to a {} tensor, which ptqkit cannot store; run without "
                              "--simplify",
                              wanted[k], DataTypeName(values[k].dtype)));
    }
    onnx::TensorProto t;
    t.set_name(wanted[k]);
    t.set_data_type(static_cast<int32_t>(values[k].dtype));
    for (int64_t d : values[k].shape) t.add_dims(d);
    t.set_raw_data(values[k].bytes.data(), values[k].bytes.size());
    results.push_back(std::move(t));
  }
  return results;
}

// Keeps the nodes and initializers some graph output depends on (and the graph inputs).
void DropDead(onnx::GraphProto* graph, google::protobuf::RepeatedPtrField<onnx::NodeProto> kept,
              const std::set<std::string>& graph_inputs, const std::set<std::string>& graph_outputs,
              SimplifyStats* stats) {
  std::set<std::string> live = graph_outputs;
  std::vector<bool> keep(kept.size(), false);
  for (int i = kept.size() - 1; i >= 0; --i) {
    for (const auto& out : kept[i].output()) keep[i] = keep[i] || live.count(out) > 0;
    if (keep[i]) {
      for (const auto& r : ReadsOf(kept[i])) live.insert(r);
    }
  }
  graph->clear_node();
  for (int i = 0; i < kept.size(); ++i) {
    if (keep[i]) *graph->add_node() = kept[i];
    else ++stats->removed_nodes;
  }
  google::protobuf::RepeatedPtrField<onnx::TensorProto> initializers;
  for (auto& init : *graph->mutable_initializer()) {
    if (live.count(init.name()) || graph_inputs.count(init.name())) *initializers.Add() = std::move(init);
    else ++stats->removed_initializers;
  }
  graph->mutable_initializer()->Swap(&initializers);
}

}  // namespace

SimplifyStats SimplifyModel(onnx::ModelProto* model, const RuntimeOptions& runtime) {
  SimplifyStats stats;
  onnx::GraphProto* graph = model->mutable_graph();
  std::set<std::string> graph_inputs, graph_outputs, constants = {""};
  for (const auto& in : graph->input()) graph_inputs.insert(in.name());
  for (const auto& out : graph->output()) graph_outputs.insert(out.name());
  for (const auto& init : graph->initializer()) {
    if (!graph_inputs.count(init.name())) constants.insert(init.name());
  }
  const auto shapes = StaticShapes(model);
  FoldPlan plan = PlanFolds(*model, shapes, graph_outputs, constants);

  // What the kept nodes (and graph outputs) read of the folded values.
  std::set<std::string> reads_of_kept;
  for (int i = 0; i < graph->node_size(); ++i) {
    if (!plan.folded[i]) {
      for (const auto& r : ReadsOf(graph->node(i))) reads_of_kept.insert(r);
    }
  }
  std::vector<std::string> wanted;
  for (const auto& name : plan.evaluated) {
    if (reads_of_kept.count(name)) wanted.push_back(name);
  }
  std::vector<onnx::TensorProto> results = EvaluateFolds(&plan, *graph, wanted, runtime);
  for (const auto& t : plan.from_dims) {
    if (reads_of_kept.count(t.name())) results.push_back(t);
  }

  // Replace the folded nodes by their needed values, then drop what no output depends on.
  google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
  for (int i = 0; i < graph->node_size(); ++i) {
    if (plan.folded[i]) ++stats.folded_nodes;
    else *kept.Add() = graph->node(i);
  }
  for (auto& t : results) *graph->add_initializer() = std::move(t);
  DropDead(graph, std::move(kept), graph_inputs, graph_outputs, &stats);
  graph->clear_value_info();  // shape inference re-derives what is left
  log::Info("--simplify: folded {} node(s) into constants, removed {} dead node(s) and {} unused initializer(s)",
            stats.folded_nodes, stats.removed_nodes, stats.removed_initializers);
  return stats;
}

}  // namespace ptqkit
