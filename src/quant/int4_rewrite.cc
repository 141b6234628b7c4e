// Weight-only, step 3 (int4_weight_only.h): the graph rewrite (the codec's initializers, blocked or
// per-axis DQ, AWQ-lite Muls), and the ONNX Runtime twins of nvfp4/mxfp8 files.
#include "quant/int4_weight_only.h"

#include <fmt/format.h>

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

// `count` packed E2M1 codes (two a byte, element 0 in the low nibble) as FLOAT8E4M3FN bytes.
std::string E2M1AsFloat8(std::string_view packed, int64_t count) {
  std::string bytes(static_cast<size_t>(count), '\0');
  for (int64_t i = 0; i < count; ++i) {
    const auto byte = static_cast<uint8_t>(packed[static_cast<size_t>(i / 2)]);
    bytes[static_cast<size_t>(i)] =
        static_cast<char>(Float4E2M1ToFloat8E4M3FN(static_cast<uint8_t>(i % 2 ? byte >> 4 : byte & 0x0f)));
  }
  return bytes;
}

std::string ScaleBytes(const std::vector<float>& scales, bool half) {
  if (!half) return std::string(reinterpret_cast<const char*>(scales.data()), scales.size() * sizeof(float));
  std::vector<uint16_t> h(scales.size());
  for (size_t i = 0; i < h.size(); ++i) h[i] = FloatToHalf(scales[i]);
  return std::string(reinterpret_cast<const char*>(h.data()), h.size() * sizeof(uint16_t));
}

int64_t ElementCount(const onnx::TensorProto& t) {
  int64_t n = 1;
  for (int64_t d : t.dims()) n *= d;
  return n;
}

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
    const std::vector<int64_t> shape = TensorShape(w);
    const bool high = options_.high_format != nullptr && options_.high_weights.count(name) > 0;
    const QuantFormat& format = high ? *options_.high_format : *options_.format;
    Int4WeightOptions wo = options_.weight;
    wo.half_scales = half;
    wo.codec = format.block_codec;
    if (wo.codec->fixed_block_size != 0) wo.block_size = wo.codec->fixed_block_size;
    if (!wo.codec->zero_points) wo.zero_point = false;  // --use_zero_point is int4's
    if (high) wo.awq_lite = false;  // round to nearest: the Grams describe the main format's blocks
    const BlockedLayout layout = MakeBlockedLayout(shape, axis, wo.block_size);
    const std::string key = fmt::format("{}\n{}\n{}", format.name, name, axis);
    const Int4Weight* cached = nullptr;
    if (options_.cache != nullptr) {
      auto it = options_.cache->find(key);
      if (it != options_.cache->end()) cached = &it->second;
    }
    Int4Weight computed;
    if (cached == nullptr) {
      const std::vector<float> values = TensorToFloats(w);
      if (std::any_of(values.begin(), values.end(), [](float v) { return std::isinf(v); })) {
        log::Warn("weight '{}' holds infinite values; their blocks get scale {}", name, kDegenerateScale);
      }
      const std::optional<BlockGram> gram = high ? std::nullopt : GroupGram(targets, layout);
      computed = QuantizeInt4Weight(values, shape, axis, gram ? &*gram : nullptr, wo);
      if (options_.cache != nullptr) cached = &options_.cache->emplace(key, std::move(computed)).first->second;
    }
    const Int4Weight& q = cached != nullptr ? *cached : computed;
    stats_.weights += 1;
    stats_.high_weights += high;
    stats_.blocks += layout.num_scales();
    stats_.clipped_blocks += q.clipped_blocks;

    // The DequantizeLinear nodes go to the front of the graph (after the weight's Constant node,
    // if it has one), not right before their first consumer. Listed there, ONNX Runtime's default
    // execution order (a depth-first walk back from the outputs, in node-index order) ran every
    // DQ at the start of a run, so all weights were dequantized at once: a 2.25 GiB chain of INT4
    // MatMuls peaked at 2.7 GiB in onnxruntime 1.32 at every level, 0.43 GiB with the DQs first.
    const int producer = index_.Producer(name);
    const int first = producer >= 0 ? producer + 1 : 0;
    std::vector<std::pair<std::string, int64_t>> attributes = {{"axis", axis}, {"block_size", layout.block}};
    std::vector<std::string> inputs;
    if (format.block_codec == nullptr || format.block_codec->element == BlockElement::kInt4) {
      const std::string q_name = Fresh(name + (options_.weight.zero_point ? "_uint4" : "_int4"));
      AddInit(q_name, options_.weight.zero_point ? format.zero_point_storage_type : format.storage_type, shape, q.packed);
      const std::string s_name = Fresh(name + "_scale");
      AddInit(s_name, w.data_type(), q.scale_shape, ScaleBytes(q.scales, half));
      inputs = {q_name, s_name};
      if (options_.weight.zero_point) {
        inputs.push_back(Fresh(name + "_zero_point"));
        AddInit(inputs.back(), format.zero_point_storage_type, q.scale_shape, PackUint4(q.zero_points));
      }
    } else {
      inputs = CodedInputs(format, name, w.data_type(), shape, q, first, &attributes);
    }
    const std::string dq_name = Fresh(name + "_DequantizeLinear");
    const std::string out = Fresh(name + "_DequantizeLinear_Output");
    editor_.InsertBefore(first, GraphEditor::MakeNode("DequantizeLinear", dq_name, inputs, out, attributes));
    if (!q.activation_scales.empty()) AddActivationScaling(name, w.data_type(), half, q, targets);
    return out;
  }

  // The other codecs (block_codec.h): the values' initializer and the scale input of the weight's
  // DequantizeLinear. int8: float scales, per axis when one block spans K. nvfp4: the scale is
  // itself DequantizeLinear(E4M3 codes, global), inserted before node `first`. mxfp8: E8M0 scales.
  // Always the standard containers; UseOrtCpuContainers makes the ONNX Runtime form from them.
  std::vector<std::string> CodedInputs(const QuantFormat& format, const std::string& name, int32_t float_type,
                                       const std::vector<int64_t>& shape, const Int4Weight& q, int first,
                                       std::vector<std::pair<std::string, int64_t>>* attributes) {
    const BlockCodec& codec = *format.block_codec;
    const bool half = float_type == onnx::TensorProto::FLOAT16;
    const std::string q_name = Fresh(name + "_" + std::string(format.name));
    AddInit(q_name, format.storage_type, shape, q.packed);
    const std::string codes(q.scale_codes.begin(), q.scale_codes.end());
    if (codec.scale_code == BlockScaleCode::kFloat) {  // int8: float scales in the weight's type
      const std::string s_name = Fresh(name + "_scale");
      if (shape.size() == 2 && q.layout.num_blocks() == 1) {
        // One block spanning K: the per-axis DequantizeLinear every runtime reads, on the output axis.
        AddInit(s_name, float_type, {static_cast<int64_t>(q.scales.size())}, ScaleBytes(q.scales, half));
        *attributes = {{"axis", 1 - (*attributes)[0].second}};
      } else {
        AddInit(s_name, float_type, q.scale_shape, ScaleBytes(q.scales, half));
      }
      return {q_name, s_name};
    }
    if (codec.scale_code == BlockScaleCode::kE4M3TimesGlobal) {
      const std::string code_name = Fresh(name + "_block_scale_e4m3");
      AddInit(code_name, onnx::TensorProto::FLOAT8E4M3FN, q.scale_shape, codes);
      const std::string global_name = Fresh(name + "_global_scale");
      AddInit(global_name, float_type, {}, ScaleBytes({q.global_scale}, half));
      const std::string scale = Fresh(name + "_block_scale");
      editor_.InsertBefore(first, GraphEditor::MakeNode("DequantizeLinear", Fresh(name + "_block_scale_DequantizeLinear"),
                                                        {code_name, global_name}, scale));
      return {q_name, scale};
    }
    const std::string s_name = Fresh(name + "_scale");
    AddInit(s_name, onnx::TensorProto::FLOAT8E8M0, q.scale_shape, codes);
    attributes->emplace_back("output_dtype", float_type);  // an E8M0 scale does not name the output type
    return {q_name, s_name};
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

bool HasStandardBlockContainers(const onnx::GraphProto& graph) {
  std::set<std::string> standard;
  for (const auto& t : graph.initializer()) {
    if (t.data_type() == onnx::TensorProto::FLOAT4E2M1 || t.data_type() == onnx::TensorProto::FLOAT8E8M0) {
      standard.insert(t.name());
    }
  }
  for (const auto& n : graph.node()) {
    if (n.op_type() != "DequantizeLinear") continue;
    for (const auto& input : n.input()) {
      if (standard.count(input)) return true;
    }
  }
  return false;
}

void UseOrtCpuContainers(onnx::GraphProto* graph) {
  std::map<std::string, onnx::TensorProto*> initializers;
  for (auto& t : *graph->mutable_initializer()) initializers[t.name()] = &t;
  for (auto& n : *graph->mutable_node()) {
    if (n.op_type() != "DequantizeLinear" || n.input_size() < 2) continue;
    auto values = initializers.find(n.input(0));
    if (values != initializers.end() && values->second->data_type() == onnx::TensorProto::FLOAT4E2M1) {
      onnx::TensorProto* t = values->second;
      t->set_raw_data(E2M1AsFloat8(t->raw_data(), ElementCount(*t)));
      t->set_data_type(onnx::TensorProto::FLOAT8E4M3FN);
    }
    auto scales = initializers.find(n.input(1));
    if (scales == initializers.end() || scales->second->data_type() != onnx::TensorProto::FLOAT8E8M0) continue;
    int64_t float_type = onnx::TensorProto::FLOAT;
    for (int a = 0; a < n.attribute_size(); ++a) {
      if (n.attribute(a).name() != "output_dtype") continue;
      float_type = n.attribute(a).i();
      n.mutable_attribute()->DeleteSubrange(a, 1);
      break;
    }
    onnx::TensorProto* t = scales->second;
    std::vector<float> powers;
    for (char code : t->raw_data()) powers.push_back(std::ldexp(1.0f, static_cast<uint8_t>(code) - 127));
    t->set_raw_data(ScaleBytes(powers, float_type == onnx::TensorProto::FLOAT16));
    t->set_data_type(static_cast<int32_t>(float_type));
  }
}

}  // namespace ptqkit
