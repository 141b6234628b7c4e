// INT4 weight-only, step 3 (int4_weight_only.h): the graph rewrite (INT4/UINT4 initializers, blocked DQ, AWQ-lite Muls).
#include "quant/int4_weight_only.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <optional>
#include <set>

#include "base/log.h"
#include "onnx/float16.h"
#include "onnx/graph_editor.h"
#include "onnx/subgraphs.h"
#include "quant/numerics.h"

namespace ptqkit {
namespace {

class Int4Rewriter {
 public:
  Int4Rewriter(onnx::ModelProto* model, const Int4RewriteOptions& options)
      : graph_(model->mutable_graph()), index_(*graph_), options_(options), editor_(graph_) {}

  Int4RewriteStats Run(const Int4Plan& plan) {
    // One quantized copy per (weight, K axis): consumers sharing a weight share its DQ, and their
    // activations' Grams add up (the error that matters is the sum over every consumer).
    std::map<std::pair<std::string, int>, std::vector<const Int4Target*>> groups;
    for (const auto& t : plan.targets) groups[{t.weight, t.axis}].push_back(&t);
    std::map<std::string, std::set<int>> readers;  // weight -> the target nodes that read it (input 1)
    for (const auto& t : plan.targets) readers[t.weight].insert(t.node);
    std::vector<std::pair<int, std::string>> rewires;
    for (auto it = groups.begin(); it != groups.end(); ++it) {
      const auto& [key, targets] = *it;
      const std::string dq_out = AddWeight(key.first, key.second, targets);
      for (const auto* t : targets) rewires.emplace_back(t->node, dq_out);
      // Groups are ordered by weight name: after the last one of a weight its float values are read
      // no more, and holding them to the end would add the packed weights on top of every float one.
      if (std::next(it) == groups.end() || std::next(it)->first.first != key.first) {
        ReleaseIfOnlyTargetsRead(key.first, readers[key.first]);
      }
    }
    for (const auto& [node, name] : rewires) graph_->mutable_node(node)->set_input(1, name);
    for (const auto& [node, name] : activation_rewires_) graph_->mutable_node(node)->set_input(0, name);
    stats_.nodes = static_cast<int>(rewires.size());
    editor_.Splice();
    DropUnused(groups);
    return stats_;
  }

 private:
  std::string Fresh(const std::string& base) { return editor_.Fresh(base); }

  // Frees the values of initializer `name` when nothing but `targets` (input 1, now being rewired
  // to its DequantizeLinear) reads it: no other node, no subgraph, not a graph input or output.
  // The emptied initializer is removed by DropUnused at the end.
  void ReleaseIfOnlyTargetsRead(const std::string& name, const std::set<int>& targets) {
    if (index_.IsGraphInput(name) || index_.IsGraphOutput(name)) return;
    for (const TensorUse& use : index_.Consumers(name)) {
      if (use.input != 1 || !targets.count(use.node)) return;
    }
    if (subgraph_reads_.empty()) {
      subgraph_reads_.insert("");  // computed once
      for (const auto& n : graph_->node()) {
        for (const auto& a : n.attribute()) {
          if (a.has_g()) onnxio::AddNodeReads(a.g(), &subgraph_reads_);
          for (const auto& g : a.graphs()) onnxio::AddNodeReads(g, &subgraph_reads_);
        }
      }
    }
    if (subgraph_reads_.count(name)) return;
    for (auto& t : *graph_->mutable_initializer()) {
      if (t.name() != name) continue;
      std::string().swap(*t.mutable_raw_data());
      google::protobuf::RepeatedField<float>().Swap(t.mutable_float_data());
      google::protobuf::RepeatedField<int32_t>().Swap(t.mutable_int32_data());  // float16 values
      return;
    }
  }

  // The Gram for a group, or null (RTN) when any consumer's activation has none: a partial sum
  // would judge the error on some consumers only.
  std::optional<BlockGram> GroupGram(const std::vector<const Int4Target*>& targets, const BlockedLayout& layout) const {
    if (options_.grams == nullptr) return std::nullopt;
    std::optional<BlockGram> sum;
    std::set<std::string> seen;
    for (const auto* t : targets) {
      if (!seen.insert(t->activation).second) continue;
      auto it = options_.grams->find(t->activation);
      if (it == options_.grams->end() || it->second.k() != layout.k || it->second.block() != layout.block) return std::nullopt;
      if (!sum) sum = it->second;
      else sum->Merge(it->second);
    }
    return sum;
  }

  std::string AddWeight(const std::string& name, int axis, const std::vector<const Int4Target*>& targets) {
    const onnx::TensorProto& w = *index_.Constant(name);
    const bool half = w.data_type() == onnx::TensorProto::FLOAT16;
    const std::vector<float> values = TensorToFloats(w);
    const std::vector<int64_t> shape = TensorShape(w);
    if (std::any_of(values.begin(), values.end(), [](float v) { return std::isinf(v); })) {
      log::Warn("weight '{}' holds infinite values; their blocks get scale {}", name, kDegenerateScale);
    }
    Int4WeightOptions wo = options_.weight;
    wo.half_scales = half;
    const BlockedLayout layout = MakeBlockedLayout(shape, axis, wo.block_size);
    const std::optional<BlockGram> gram = GroupGram(targets, layout);
    const Int4Weight q = QuantizeInt4Weight(values, shape, axis, gram ? &*gram : nullptr, wo);
    stats_.weights += 1;
    stats_.blocks += layout.num_scales();
    stats_.clipped_blocks += q.clipped_blocks;

    const std::string q_name = Fresh(name + (options_.weight.zero_point ? "_uint4" : "_int4"));
    const QuantFormat& format = *options_.format;
    AddInit(q_name, options_.weight.zero_point ? format.zero_point_storage_type : format.storage_type, shape, q.packed);
    const std::string s_name = Fresh(name + "_scale");
    AddInit(s_name, w.data_type(), q.scale_shape, ScaleBytes(q.scales, half));
    std::vector<std::string> inputs = {q_name, s_name};
    if (options_.weight.zero_point) {
      inputs.push_back(Fresh(name + "_zero_point"));
      AddInit(inputs.back(), format.zero_point_storage_type, q.scale_shape, PackUint4(q.zero_points));
    }
    const std::string dq_name = Fresh(name + "_DequantizeLinear");
    const std::string out = Fresh(name + "_DequantizeLinear_Output");
    onnx::NodeProto dq =
        GraphEditor::MakeNode("DequantizeLinear", dq_name, inputs, out, {{"axis", axis}, {"block_size", layout.block}});
    int first = targets.front()->node;
    for (const auto* t : targets) first = std::min(first, t->node);
    editor_.InsertBefore(first, std::move(dq));
    if (!q.activation_scales.empty()) AddActivationScaling(name, w.data_type(), half, q, targets);
    return out;
  }

  // awq_lite: the weight now stores Q(diag(s) W), so each consumer's activation is multiplied by
  // 1/s first. One [K] initializer per weight; one Mul per consumer, feeding that consumer only
  // (another node reading the same activation, with its own weight and scales, is untouched).
  void AddActivationScaling(const std::string& name, int32_t type, bool half, const Int4Weight& q,
                            const std::vector<const Int4Target*>& targets) {
    const std::string inv_name = Fresh(name + "_awq_lite_inv_scale");
    AddInit(inv_name, type, {q.layout.k}, ScaleBytes(q.activation_scales, half));
    for (const auto* t : targets) {
      const std::string& consumer = index_.node(t->node).name();
      const std::string mul_name = Fresh((consumer.empty() ? name : consumer) + "_awq_lite_Mul");
      const std::string out = Fresh(t->activation + "_awq_lite_scaled");
      editor_.InsertBefore(t->node, GraphEditor::MakeNode("Mul", mul_name, {t->activation, inv_name}, out));
      activation_rewires_.emplace_back(t->node, out);
      stats_.scale_muls += 1;
    }
    stats_.scaled_weights += 1;
    log::Debug("int4 awq_lite: weight '{}' alpha {:.2f}, {} consumer(s) read Mul(activation, 1/s)", name,
               q.awq_lite_alpha, targets.size());
  }

  static std::string ScaleBytes(const std::vector<float>& scales, bool half) {
    if (!half) return std::string(reinterpret_cast<const char*>(scales.data()), scales.size() * sizeof(float));
    std::vector<uint16_t> h(scales.size());
    for (size_t i = 0; i < h.size(); ++i) h[i] = FloatToHalf(scales[i]);
    return std::string(reinterpret_cast<const char*>(h.data()), h.size() * sizeof(uint16_t));
  }

  void AddInit(const std::string& name, int32_t type, const std::vector<int64_t>& dims, const std::string& bytes) {
    editor_.AddInitializer(name, type, dims, bytes);
  }

  // Float weights that nothing reads any more (initializer or Constant node, and their value_info).
  template <typename Groups>
  void DropUnused(const Groups& groups) {
    std::set<std::string> replaced;
    for (const auto& [key, targets] : groups) replaced.insert(key.first);
    editor_.RemoveUnread(replaced);
  }

  onnx::GraphProto* graph_;
  GraphIndex index_;
  Int4RewriteOptions options_;
  GraphEditor editor_;
  std::vector<std::pair<int, std::string>> activation_rewires_;  // (node, its new input A)
  std::set<std::string> subgraph_reads_;                          // names read inside subgraphs, once needed
  Int4RewriteStats stats_;
};

}  // namespace

Int4RewriteStats RewriteInt4(onnx::ModelProto* model, const Int4Plan& plan, const Int4RewriteOptions& options) {
  return Int4Rewriter(model, options).Run(plan);
}

}  // namespace ptqkit
