#include "quant/placement/placement.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "base/log.h"
#include "onnx/graph_editor.h"
#include "onnx/op_traits.h"
#include "ptqkit/error.h"
#include "quant/placement/graph_patterns.h"
#include "quant/placement/selectors.h"

namespace ptqkit {
namespace {

// The format's PlacementProfile (quant/formats/formats.h) sets the Conv limits: TensorRT pads INT8
// channels to much larger multiples, so small-channel Convs gain nothing (and quantizing an RGB
// image input costs accuracy); its FP8 kernels cover fewer Convs still.
// GEMMs with K or N below this stay in float (TensorRT has no INT8 kernels worth it; ModelOpt does the same).
constexpr int64_t kMinGemmDim = 16;

class Planner {
 public:
  Planner(const GraphIndex& graph, const PlacementOptions& options)
      : g_(graph),
        format_(*options.format),
        profile_(options.format->placement),
        runtime_(*options.runtime),
        disable_mha_qdq_(options.disable_mha_qdq),
        replaces_weights_(options.replaces_weights),
        kept_in_float_(options.kept_in_float),
        include_(graph, options.nodes_to_quantize, options.op_types_to_quantize, "--nodes_to_quantize",
                 "--op_types_to_quantize", options.matched_selectors),
        exclude_(graph, options.nodes_to_exclude, options.op_types_to_exclude, "--nodes_to_exclude",
                 "--op_types_to_exclude", options.matched_selectors) {}

  Placement Run() {
    if (!include_.empty()) {
      // Explicit selection bypasses the placement rules: every selected node gets its inputs quantized.
      for (int i = 0; i < g_.num_nodes(); ++i) {
        if (!include_.Selects(i) || Excluded(i)) continue;
        if (disable_mha_qdq_ && IsAttentionMatMul(g_, i)) {
          plan_.float_reasons[i] = "attention core MatMul (--disable_mha_qdq)";
          continue;
        }
        QuantizeNodeInputs(i, DataInputIndices(g_.node(i)));
      }
      ExtendToIntegerKernels(false);
    } else {
      ApplyRules();
      ExtendToIntegerKernels(true);
      QuantizeEmbeddings();
    }
    ShareConcatScales();
    return Finish();
  }

 private:
  bool Excluded(int i) {
    auto kept = kept_in_float_.find(g_.node(i).name());
    if (kept != kept_in_float_.end()) {
      plan_.float_reasons[i] = kept->second;
      return true;
    }
    if (!exclude_.Selects(i)) return false;
    plan_.float_reasons[i] = "excluded by user (" + exclude_.Why(i) + ")";
    return true;
  }

  bool ProducesGraphOutput(int i) const {
    for (const auto& o : g_.node(i).output()) {
      if (g_.IsGraphOutput(o)) return true;
    }
    return false;
  }

  // Why a Conv/ConvTranspose/Gemm/MatMul stays in float under the default rules, or "".
  std::string CoreRuleReason(int i) const {
    const auto& n = g_.node(i);
    if (ProducesGraphOutput(i)) return "produces a graph output";
    if (IsConvolution(n)) {
      const onnx::TensorProto* w = n.input_size() > 1 ? g_.Constant(n.input(1)) : nullptr;
      const WeightLayout layout = w ? WeightLayoutOf(n, *w) : WeightLayout{};
      if (layout.in_channels < 0) return "weight is not a constant";
      int64_t cin = layout.in_channels, cout = layout.out_channels;
      const int64_t groups = IntAttribute(n, "group", 1);
      if (profile_.conv_channels_per_group && groups > 1) {
        cin = w->dims(layout.in_axis);  // the channels of one group, as the weight holds them
        cout = w->dims(layout.out_axis);
        if (cin < profile_.min_conv_channels || cout < profile_.min_conv_channels) {
          return fmt::format("grouped conv (group {}: weight channels {} in, {} out; < {} in {} mode)", groups, cin,
                             cout, profile_.min_conv_channels, format_.name);
        }
      }
      if (TraitsOf(n).weight_layout == WeightLayoutKind::kConvTranspose && !profile_.quantize_conv_transpose) {
        return fmt::format("ConvTranspose is not quantized in {} mode", format_.name);
      }
      if (cin < profile_.min_conv_channels || cout < profile_.min_conv_channels) {
        return fmt::format("small-channel conv ({} in, {} out; < {})", cin, cout, profile_.min_conv_channels);
      }
      if (profile_.max_conv_kernel_volume > 0) {
        int64_t volume = 1;
        for (int d = 2; d < w->dims_size(); ++d) volume *= w->dims(d);
        if (volume > profile_.max_conv_kernel_volume) {
          return fmt::format("kernel volume {} > {} in {} mode", volume, profile_.max_conv_kernel_volume, format_.name);
        }
      }
      return "";
    }
    // MatMul / Gemm
    if (IsAttentionMatMul(g_, i)) return "attention core MatMul";
    auto [k, nn] = GemmDims(g_, i);
    if (k >= 0 && (k < kMinGemmDim || nn < kMinGemmDim)) {
      return fmt::format("small GEMM (K={}, N={}; < {})", k, nn, kMinGemmDim);
    }
    return "";
  }

  void ApplyRules() {
    // 1. The compute ops themselves.
    for (int i = 0; i < g_.num_nodes(); ++i) {
      const auto& n = g_.node(i);
      if (!IsLinearOp(n) || Excluded(i)) continue;
      const std::string why = CoreRuleReason(i);
      if (!why.empty()) {
        plan_.float_reasons[i] = why;
        continue;
      }
      QuantizeNodeInputs(i, {0, 1});
    }
    // A form that quantizes op outputs grows its own integer region instead (ExtendToIntegerKernels):
    // TensorRT's neighbour rules would add Q/DQ where that runtime has no kernel to use them.
    if (runtime_.quantize_op_outputs) return;
    // 2. Ops that the runtime fuses with or runs next to a quantized Conv (its neighbour rules).
    for (int i = 0; i < g_.num_nodes(); ++i) {
      const auto& n = g_.node(i);
      const NeighbourOp* neighbour = FindNeighbourRule(runtime_, n);
      if (neighbour == nullptr || neighbour->rule == NeighbourRule::kBetweenQuantized) continue;
      if (neighbour->rule == NeighbourRule::kResidualAdd) {
        ResidualAdd(i);
        continue;
      }
      if (!profile_.quantize_neighbours) continue;  // e.g. fp8: only Conv, Gemm, MatMul and Add
      const int conv = neighbour->rule == NeighbourRule::kAfterConv ? ConvGroupSource(g_, n.input(0), true)
                                                                     : ConvSourceThroughLayout(g_, n.input(0));
      if (conv >= 0 && core_quantized_.count(conv) && !ProducesGraphOutput(i) && !Excluded(i)) {
        QuantizeNodeInputs(i, {0});
      }
    }
    // 3. Pooling, only between quantized ops (so it can run in INT8 without an extra Q/DQ).
    for (int i = 0; i < g_.num_nodes() && profile_.quantize_neighbours; ++i) {
      const auto& n = g_.node(i);
      const NeighbourOp* neighbour = FindNeighbourRule(runtime_, n);
      if (neighbour == nullptr || neighbour->rule != NeighbourRule::kBetweenQuantized || ProducesGraphOutput(i)) {
        continue;
      }
      if (ConvGroupSource(g_, n.input(0), true) >= 0) continue;  // Conv epilogue: left untouched
      const auto& uses = g_.Consumers(n.output(0));
      const bool feeds_quantized = !uses.empty() && std::all_of(uses.begin(), uses.end(), [&](const TensorUse& u) {
        return quantized_nodes_.count(u.node) > 0;
      });
      const bool input_quantized = tensor_slot_.count(n.input(0)) > 0;
      if ((feeds_quantized || input_quantized) && !Excluded(i)) QuantizeNodeInputs(i, {0});
    }
  }

  // Conv -> [BN] -> Add(skip): TensorRT fuses the Add into the Conv when the skip input is
  // quantized, so only the skip input gets Q/DQ.
  void ResidualAdd(int i) {
    const auto& n = g_.node(i);
    if (n.input_size() != 2 || g_.IsConstant(n.input(0)) || g_.IsConstant(n.input(1)) || ProducesGraphOutput(i)) return;
    // A search (autotune, budget) that kept this Add in float says so even when the Conv it would
    // fuse with is in float too (then the Add is no candidate, but the report names the choice).
    if (kept_in_float_.count(n.name())) {
      Excluded(i);
      return;
    }
    int c0 = ConvGroupSource(g_, n.input(0), false);
    int c1 = ConvGroupSource(g_, n.input(1), false);
    if (c0 >= 0 && !core_quantized_.count(c0)) c0 = -1;
    if (c1 >= 0 && !core_quantized_.count(c1)) c1 = -1;
    if (c0 < 0 && c1 < 0) return;
    // Both branches end in a Conv (downsampling block): fuse the later one, the main branch.
    const int fused_input = (c0 >= 0 && c1 >= 0) ? (c0 > c1 ? 0 : 1) : (c0 >= 0 ? 0 : 1);
    if (Excluded(i)) return;
    QuantizeNodeInputs(i, {1 - fused_input});
  }

  // A runtime whose kernels need Q on outputs (runtime_forms.h): with `neighbours`, the ops with an
  // integer kernel that sit between quantized ops join; then each op of that integer region gets a
  // Q/DQ on its kernel output where its kernel needs one or another integer kernel reads it.
  void ExtendToIntegerKernels(bool neighbours) {
    if (!runtime_.quantize_op_outputs) return;
    LeaveFloatWhereIntegerCostsMore();
    std::set<int> region = core_quantized_;
    for (bool grew = neighbours; grew;) {
      grew = false;
      for (int i = 0; i < g_.num_nodes(); ++i) {
        if (region.count(i) || !JoinsRegion(i, region) || Excluded(i)) continue;
        QuantizeNodeInputs(i, DataInputIndices(g_.node(i)));
        region.insert(i);
        grew = true;
      }
    }
    for (int i : region) QuantizeKernelOutput(i, region);  // ascending: producers before consumers
  }

  // Where this runtime's integer kernel costs more than it saves, the node stays in float, with the
  // reason (measured in ONNX Runtime on this project's corpus):
  //  - a kernel that needs its output quantized, whose output only a float activation reads
  //    (HardSwish): a Q and a DQ around that activation and the tensor quantized twice; PP-LCNet
  //    (Conv -> HardSwish throughout) ran at 0.85x FP32 and lost 6 points of top-1;
  //  - a MatMul of two run-time inputs whose output stays float (attention's Q·K^T): static Q on
  //    both inputs and MatMulIntegerToFloat were slower than the float FusedMatMul (all-MiniLM-L6
  //    4.31 ms against 4.15 ms with those 6 MatMuls in float, same accuracy).
  void LeaveFloatWhereIntegerCostsMore() {
    std::vector<std::pair<int, std::string>> dropped;
    for (int i : core_quantized_) {
      const IntegerKernel* kernel = FindIntegerKernel(runtime_, g_.node(i));
      const std::string out = KernelOutput(g_, i);
      if (kernel == nullptr || out.empty()) continue;
      const auto& uses = g_.Consumers(out);
      const bool integer_reader = std::any_of(uses.begin(), uses.end(), [&](const TensorUse& u) {
        return core_quantized_.count(u.node) > 0;
      });
      if (integer_reader) continue;
      const auto float_activation = std::find_if(uses.begin(), uses.end(), [&](const TensorUse& u) {
        return IsFloatOnlyActivation(runtime_, g_.node(u.node));
      });
      const auto& n = g_.node(i);
      if (kernel->pattern == KernelPattern::kInputsAndOutput && float_activation != uses.end()) {
        dropped.emplace_back(i, fmt::format("--target_runtime {}: its output feeds {}, which has no integer kernel "
                                            "there (a Q/DQ pair around it would cost more than the integer {} saves)",
                                            runtime_.name, g_.node(float_activation->node).op_type(), n.op_type()));
      } else if (TraitsOf(n).weight_layout == WeightLayoutKind::kMatMul && n.input_size() == 2 &&
                 !g_.IsConstant(n.input(0)) && !g_.IsConstant(n.input(1))) {
        dropped.emplace_back(i, fmt::format("--target_runtime {}: both inputs are computed at run time and the "
                                            "output stays float; its float kernel is faster",
                                            runtime_.name));
      }
    }
    for (const auto& [i, why] : dropped) UnquantizeNode(i, why);
  }

  // Takes node i out of the plan: its uses go, and entries left without uses.
  void UnquantizeNode(int i, const std::string& reason) {
    for (auto& t : plan_.tensors) {
      t.uses.erase(std::remove_if(t.uses.begin(), t.uses.end(), [&](const TensorUse& u) { return u.node == i; }),
                   t.uses.end());
    }
    plan_.tensors.erase(std::remove_if(plan_.tensors.begin(), plan_.tensors.end(),
                                       [](const QuantizedTensor& t) { return t.uses.empty(); }),
                        plan_.tensors.end());
    RebuildSlots();
    quantized_nodes_.erase(i);
    core_quantized_.erase(i);
    plan_.float_reasons[i] = reason;
  }

  // RuntimeForm::int8_embeddings: Gathers of a large constant float table by run-time indices.
  void QuantizeEmbeddings() {
    if (!runtime_.int8_embeddings) return;
    for (int i = 0; i < g_.num_nodes(); ++i) {
      const auto& n = g_.node(i);
      if (n.op_type() != "Gather" || !n.domain().empty() || n.input_size() != 2 || IntAttribute(n, "axis", 0) != 0) {
        continue;
      }
      const onnx::TensorProto* table = g_.Constant(n.input(0));
      if (table == nullptr || table->dims_size() != 2 || ElementCount(*table) < kMinEmbeddingElements ||
          table->data_type() != onnx::TensorProto::FLOAT || g_.IsConstant(n.input(1))) {
        continue;
      }
      if (!WhyNotReplaceable(g_, n.input(0)).empty() || Excluded(i)) continue;
      QuantizedTensor q;
      q.tensor = n.input(0);
      q.is_weight = true;
      q.embedding = true;
      q.axis = 0;
      AddUse(q, {i, 0});
      quantized_nodes_.insert(i);
    }
  }

  bool JoinsRegion(int i, const std::set<int>& region) const {
    const IntegerKernel* kernel = FindIntegerKernel(runtime_, g_.node(i));
    if (kernel == nullptr || ProducesGraphOutput(i)) return false;
    if (kernel->pattern != KernelPattern::kBetweenKernels && kernel->pattern != KernelPattern::kSameScale) return false;
    bool fed = false;
    for (int j : DataInputIndices(g_.node(i))) {
      if (j >= g_.node(i).input_size()) continue;
      const std::string& t = g_.node(i).input(j);
      if (t.empty() || g_.IsConstant(t)) return false;  // an Add/Mul by a constant stays float
      fed |= region.count(KernelProducer(g_, t)) > 0;
    }
    const std::string out = KernelOutput(g_, i);
    if (!fed || out.empty()) return false;
    const auto& uses = g_.Consumers(out);
    return std::any_of(uses.begin(), uses.end(), [&](const TensorUse& u) { return region.count(u.node) > 0; });
  }

  void QuantizeKernelOutput(int i, const std::set<int>& region) {
    const IntegerKernel* kernel = FindIntegerKernel(runtime_, g_.node(i));
    const std::string out = KernelOutput(g_, i);
    if (kernel == nullptr || out.empty() || g_.IsGraphOutput(out)) return;
    const auto& uses = g_.Consumers(out);
    const bool read_by_kernel =
        std::any_of(uses.begin(), uses.end(), [&](const TensorUse& u) { return region.count(u.node) > 0; });
    if (uses.empty() || (kernel->pattern == KernelPattern::kInputsOutputOptional && !read_by_kernel)) return;
    // Every reader takes the DQ: the runtime fuses only a kernel whose sole consumer is the Q.
    QuantizedTensor q;
    q.tensor = out;
    for (const auto& use : uses) AddUse(q, use);
    if (kernel->pattern == KernelPattern::kSameScale) ShareScale(g_.node(i).input(0), out);
  }

  // The input and output of an op that moves integers unchanged share one scale group.
  void ShareScale(const std::string& input, const std::string& output) {
    auto in = tensor_slot_.find(input + "#-1");
    auto out = tensor_slot_.find(output + "#-1");
    if (in == tensor_slot_.end() || out == tensor_slot_.end()) return;
    std::string& group = plan_.tensors[in->second].scale_group;
    if (group.empty()) group = input;
    plan_.tensors[out->second].scale_group = group;
  }

  // Why node i's weight (input 1 of a compute op) may not be replaced, when this plan replaces
  // weights (dq_only), or "".
  std::string WeightNotReplaceable(int i, const std::vector<int>& inputs) const {
    const auto& n = g_.node(i);
    if (!replaces_weights_ || !IsLinearOp(n) || n.input_size() < 2) return "";
    if (std::find(inputs.begin(), inputs.end(), 1) == inputs.end()) return "";
    const onnx::TensorProto* w = g_.Constant(n.input(1));
    if (w == nullptr || (w->data_type() != onnx::TensorProto::FLOAT && w->data_type() != onnx::TensorProto::FLOAT16)) {
      return "";  // not a float weight: never replaced
    }
    return WhyNotReplaceable(g_, n.input(1));
  }

  void QuantizeNodeInputs(int i, const std::vector<int>& inputs) {
    const auto& n = g_.node(i);
    if (const std::string why = WeightNotReplaceable(i, inputs); !why.empty()) {
      plan_.float_reasons[i] = why;
      return;
    }
    bool any = false;
    for (int j : inputs) {
      if (j >= n.input_size() || n.input(j).empty()) continue;
      const std::string& t = n.input(j);
      const onnx::TensorProto* c = g_.Constant(t);
      QuantizedTensor q;
      q.tensor = t;
      if (c) {
        const bool is_float = c->data_type() == onnx::TensorProto::FLOAT || c->data_type() == onnx::TensorProto::FLOAT16;
        const bool is_weight_slot = j == TraitsOf(n).weight_input;
        if (!is_float || !is_weight_slot) continue;  // constants other than weights stay float
        q.is_weight = true;
        q.axis = WeightLayoutOf(n, *c).out_axis;
      }
      AddUse(q, {i, j});
      any = true;
    }
    if (any) {
      quantized_nodes_.insert(i);
      if (IsLinearOp(n)) core_quantized_.insert(i);
    }
  }

  void RebuildSlots() {
    tensor_slot_.clear();  // after entries were erased: indices moved
    for (size_t k = 0; k < plan_.tensors.size(); ++k) {
      tensor_slot_[plan_.tensors[k].tensor] = k;
      tensor_slot_[SlotKey(plan_.tensors[k])] = k;
    }
  }

  // One entry per (tensor, axis, embedding or not): a weight shared by nodes that need different
  // axes gets two.
  static std::string SlotKey(const QuantizedTensor& q) {
    return q.tensor + "#" + std::to_string(q.axis) + (q.embedding ? "#embedding" : "");
  }

  void AddUse(const QuantizedTensor& q, TensorUse use) {
    const std::string key = SlotKey(q);
    auto it = tensor_slot_.find(key);
    if (it == tensor_slot_.end()) {
      tensor_slot_[q.tensor] = plan_.tensors.size();  // plain name: "is this tensor quantized at all"
      tensor_slot_[key] = plan_.tensors.size();
      plan_.tensors.push_back(q);
      plan_.tensors.back().uses.push_back(use);
    } else {
      auto& uses = plan_.tensors[it->second].uses;
      const bool known = std::any_of(uses.begin(), uses.end(),
                                     [&](const TensorUse& u) { return u.node == use.node && u.input == use.input; });
      if (!known) uses.push_back(use);
    }
  }

  // A quantized activation produced by Concat: quantize the Concat's inputs with the output's
  // scale so TensorRT can concatenate in INT8.
  void ShareConcatScales() {
    const size_t count = plan_.tensors.size();
    for (size_t k = 0; k < count; ++k) {
      if (plan_.tensors[k].is_weight) continue;
      const int p = g_.Producer(plan_.tensors[k].tensor);
      if (p < 0 || !HasFlag(g_.node(p), OpFlag::kConcatenates) || exclude_.Selects(p)) continue;
      const std::string group = plan_.tensors[k].tensor;
      plan_.tensors[k].scale_group = group;
      const auto& concat = g_.node(p);
      for (int j = 0; j < concat.input_size(); ++j) {
        if (g_.IsConstant(concat.input(j))) continue;
        QuantizedTensor q;
        q.tensor = concat.input(j);
        q.scale_group = group;
        AddUse(q, {p, j});
        // The input may already be quantized for another consumer: it joins the group too.
        auto& entry = plan_.tensors[tensor_slot_[q.tensor + "#-1"]];
        if (entry.scale_group.empty()) entry.scale_group = group;
        quantized_nodes_.insert(p);
      }
    }
  }

  // Unsigned storage (runtime_forms.h): a tensor is stored with zero point 0 when it and every
  // tensor of its scale group are never negative.
  void MarkNonNegative() {
    if (!runtime_.unsigned_activations) return;
    std::map<std::string, bool> group_non_negative;
    for (auto& t : plan_.tensors) {
      if (t.is_weight) continue;
      t.non_negative = IsNonNegative(g_, t.tensor);
      if (!t.scale_group.empty()) {
        auto [it, fresh] = group_non_negative.emplace(t.scale_group, t.non_negative);
        if (!fresh) it->second = it->second && t.non_negative;
      }
    }
    for (auto& t : plan_.tensors) {
      if (!t.is_weight && !t.scale_group.empty()) t.non_negative = group_non_negative.at(t.scale_group);
    }
  }

  // RuntimeForm::qdq_above_layout_ops: an activation entry that only Convs read, produced by a layout
  // op that only it reads, moves to that op's input (the layout op becomes its use), merging with an entry already
  // there. Scale groups (Concat) stay as they are.
  void MoveQdqAboveLayoutOps() {
    if (!runtime_.qdq_above_layout_ops) return;
    std::vector<QuantizedTensor> moved;
    for (auto& t : plan_.tensors) {
      if (t.is_weight || !t.scale_group.empty() || t.dynamic_blocks) continue;
      const int p = g_.Producer(t.tensor);
      if (p < 0 || !HasFlag(g_.node(p), OpFlag::kReshapes) || g_.node(p).input_size() == 0) continue;
      const std::string& source = g_.node(p).input(0);
      if (g_.Consumers(t.tensor).size() != t.uses.size() || g_.IsGraphOutput(t.tensor) || g_.IsConstant(source)) {
        continue;  // a float reader of the layout op's output would lose its values
      }
      // Convs only: moved above the Reshape/Transpose of MiniLM's attention MatMuls, OpenVINO ran it
      // slower (6.30 ms against 5.66 ms).
      const bool conv_reads = std::all_of(t.uses.begin(), t.uses.end(), [&](const TensorUse& u) {
        return IsConvolution(g_.node(u.node));
      });
      if (!conv_reads) continue;
      QuantizedTensor q = t;
      q.tensor = source;
      q.uses = {TensorUse{p, 0}};
      moved.push_back(q);
      t.uses.clear();
    }
    plan_.tensors.erase(std::remove_if(plan_.tensors.begin(), plan_.tensors.end(),
                                       [](const QuantizedTensor& t) { return t.uses.empty(); }),
                        plan_.tensors.end());
    RebuildSlots();
    for (const auto& q : moved) AddUse(q, q.uses.front());
  }

  Placement Finish() {
    MoveQdqAboveLayoutOps();
    MarkNonNegative();
    plan_.quantized_nodes.assign(quantized_nodes_.begin(), quantized_nodes_.end());
    for (int i : plan_.quantized_nodes) plan_.float_reasons.erase(i);
    return std::move(plan_);
  }

  const GraphIndex& g_;
  const QuantFormat& format_;
  const PlacementProfile& profile_;
  const RuntimeForm& runtime_;
  bool disable_mha_qdq_;
  bool replaces_weights_;
  const std::map<std::string, std::string>& kept_in_float_;
  NodeSelector include_;
  NodeSelector exclude_;
  Placement plan_;
  std::map<std::string, size_t> tensor_slot_;
  std::set<int> quantized_nodes_;
  std::set<int> core_quantized_;
};

}  // namespace

Placement PlanPlacement(const GraphIndex& graph, const PlacementOptions& options) {
  if (options.format->placement.weight_only) return PlanWeightOnlyPlacement(graph, options);
  return Planner(graph, options).Run();
}

std::map<std::string, float> PlanRanges(const Placement& plan, const std::map<std::string, float>& tensor_amax) {
  std::map<std::string, float> ranges;
  std::map<std::string, float> group_amax;
  for (const auto& t : plan.tensors) {
    if (t.is_weight) continue;
    auto it = tensor_amax.find(t.tensor);
    if (it == tensor_amax.end()) {
      throw Error(fmt::format("no calibrated range for tensor '{}' (a calibration cache made for another model or "
                              "other selectors?)",
                              t.tensor));
    }
    ranges[t.tensor] = it->second;
    if (!t.scale_group.empty()) group_amax[t.scale_group] = std::max(group_amax[t.scale_group], it->second);
  }
  for (const auto& t : plan.tensors) {
    if (!t.is_weight && !t.scale_group.empty()) ranges[t.tensor] = group_amax.at(t.scale_group);
  }
  return ranges;
}

std::vector<std::string> Placement::ActivationTensors() const {
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (const auto& t : tensors) {
    if (!t.is_weight && seen.insert(t.tensor).second) names.push_back(t.tensor);
  }
  return names;
}

void Placement::DropTensor(const std::string& tensor, const GraphIndex& graph, const std::string& reason) {
  std::set<int> affected;
  for (const auto& t : tensors) {
    if (t.tensor == tensor && !t.is_weight) {
      for (const auto& u : t.uses) affected.insert(u.node);
    }
  }
  tensors.erase(std::remove_if(tensors.begin(), tensors.end(),
                               [&](const QuantizedTensor& t) { return t.tensor == tensor && !t.is_weight; }),
                tensors.end());
  // A node with no quantized activation input left is back in float, weights included: a float
  // activation times a fake-quantized weight runs in float anyway and only loses accuracy.
  for (int node : affected) {
    bool still = false;
    for (const auto& t : tensors) {
      for (const auto& u : t.uses) still |= u.node == node && !t.is_weight;
    }
    if (!still) {
      for (auto& t : tensors) {
        if (!t.is_weight) continue;
        t.uses.erase(std::remove_if(t.uses.begin(), t.uses.end(), [&](const TensorUse& u) { return u.node == node; }),
                     t.uses.end());
      }
      tensors.erase(std::remove_if(tensors.begin(), tensors.end(), [](const QuantizedTensor& t) { return t.uses.empty(); }),
                    tensors.end());
      quantized_nodes.erase(std::remove(quantized_nodes.begin(), quantized_nodes.end(), node), quantized_nodes.end());
      float_reasons[node] = reason;
    }
  }
  log::Debug("not quantizing '{}' ({}); node '{}'", tensor, reason,
             affected.empty() ? std::string() : graph.node(*affected.begin()).name());
}

}  // namespace ptqkit
