#include "quant/rewrite/model_placement.h"

#include <set>

#include "base/log.h"

namespace ptqkit {
namespace {

void WarnUnmatched(const std::vector<std::string>& selectors, const std::string& option,
                   const std::set<std::string>& matched) {
  for (const auto& s : selectors) {
    if (!matched.count(option + " " + s)) log::Warn("{} '{}' matches no node of the model", option, s);
  }
}

}  // namespace

ModelPlacement::ModelPlacement(onnx::ModelProto* model, const PlacementOptions& options) : model_(model) {
  std::set<std::string> matched;
  PlacementOptions scoped = options;
  scoped.matched_selectors = &matched;
  for (auto& scope : onnxio::AllGraphs(model->mutable_graph())) {
    const GraphIndex* outer = scope.parent < 0 ? nullptr : scopes_[static_cast<size_t>(scope.parent)].index.get();
    auto index = std::make_unique<GraphIndex>(*scope.graph, outer);
    Placement plan = PlanPlacement(*index, scoped);
    scopes_.push_back({scope, std::move(index), std::move(plan)});
  }
  WarnUnmatched(options.nodes_to_quantize, "--nodes_to_quantize", matched);
  WarnUnmatched(options.nodes_to_exclude, "--nodes_to_exclude", matched);
  WarnUnmatched(options.op_types_to_quantize, "--op_types_to_quantize", matched);
  WarnUnmatched(options.op_types_to_exclude, "--op_types_to_exclude", matched);
}

std::vector<std::string> ModelPlacement::ActivationTensors() const {
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (const auto& s : scopes_) {
    for (auto& t : s.plan.ActivationTensors()) {
      if (seen.insert(t).second) names.push_back(std::move(t));
    }
  }
  return names;
}

void ModelPlacement::DropTensor(const std::string& tensor, const std::string& reason) {
  for (auto& s : scopes_) s.plan.DropTensor(tensor, *s.index, reason);
}

void ModelPlacement::UseFormatFor(const std::set<std::string>& nodes, const QuantFormat* format) {
  for (auto& s : scopes_) {
    std::set<std::string> groups;
    for (auto& q : s.plan.tensors) {
      for (const auto& u : q.uses) {
        if (!nodes.count(s.index->node(u.node).name())) continue;
        q.format = format;
        if (!q.scale_group.empty()) groups.insert(q.scale_group);
      }
    }
    for (auto& q : s.plan.tensors) {
      if (!q.scale_group.empty() && groups.count(q.scale_group)) q.format = format;
    }
  }
}

std::map<std::string, const QuantFormat*> ModelPlacement::TensorFormats() const {
  std::map<std::string, const QuantFormat*> formats;
  for (const auto& s : scopes_) {
    for (const auto& q : s.plan.tensors) {
      if (q.format != nullptr) formats[q.tensor] = q.format;
    }
  }
  return formats;
}

std::map<std::string, float> ModelPlacement::Ranges(const std::map<std::string, float>& tensor_amax) const {
  std::map<std::string, float> ranges;
  for (const auto& s : scopes_) ranges.merge(PlanRanges(s.plan, tensor_amax));
  return ranges;
}

RewriteStats ModelPlacement::Rewrite(const std::map<std::string, float>& activation_amax, RewriteOptions options) {
  RewriteStats total;
  if (scopes_.size() == 1) return InsertQdq(model_, scopes_[0].plan, activation_amax, options);
  // Names must be unique across the whole model, and each rewrite adds some: collect them again
  // before every graph. Subgraphs first: their indexes point into nodes the main rewrite moves.
  for (size_t k = scopes_.size(); k-- > 0;) {
    const auto& s = scopes_[k];
    if (s.plan.tensors.empty()) continue;
    const std::set<std::string> reserved = onnxio::AllNames(model_->graph());
    options.reserved_names = &reserved;
    const GraphIndex* outer = s.scope.parent < 0 ? nullptr : scopes_[static_cast<size_t>(s.scope.parent)].index.get();
    const RewriteStats stats = InsertQdqInSubgraph(s.scope.graph, outer, s.plan, activation_amax, options);
    total.qdq_pairs += stats.qdq_pairs;
    total.weight_tensors += stats.weight_tensors;
    total.dynamic_matmuls += stats.dynamic_matmuls;
    total.int8_embeddings += stats.int8_embeddings;
  }
  return total;
}

std::map<std::string, int> ModelPlacement::QuantizedByOpType() const {
  std::map<std::string, int> counts;
  for (const auto& s : scopes_) {
    for (int i : s.plan.quantized_nodes) ++counts[s.index->node(i).op_type()];
  }
  return counts;
}

std::vector<std::pair<std::string, std::string>> ModelPlacement::QuantizedNodes(bool main_graph_only) const {
  std::vector<std::pair<std::string, std::string>> nodes;
  for (const auto& s : scopes_) {
    for (int i : s.plan.quantized_nodes) nodes.emplace_back(s.index->node(i).name(), s.index->node(i).op_type());
    if (main_graph_only) break;  // scopes_ starts with the main graph
  }
  return nodes;
}

std::vector<std::pair<std::string, std::string>> ModelPlacement::LeftInFloat() const {
  std::vector<std::pair<std::string, std::string>> left;
  for (const auto& s : scopes_) {
    for (const auto& [node, reason] : s.plan.float_reasons) left.emplace_back(s.index->node(node).name(), reason);
  }
  return left;
}

}  // namespace ptqkit
