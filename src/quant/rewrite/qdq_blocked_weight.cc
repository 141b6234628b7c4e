#include "quant/rewrite/qdq_blocked_weight.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "base/log.h"
#include "onnx/subgraphs.h"
#include "quant/formats/numerics.h"

namespace ptqkit {
namespace {

// The activation a planned weight's use multiplies: input 0 of its MatMul/Gemm.
const std::string& Activation(const GraphIndex& index, const TensorUse& use) { return index.node(use.node).input(0); }

// The Gram for a weight's uses, or null (RTN) when any use's activation has none: a partial sum
// would judge the error on some consumers only. Uses sharing an activation count it once.
std::optional<BlockGram> UsesGram(const BlockedWeightOptions& options, const GraphIndex& index,
                                  const QuantizedTensor& q, const BlockedLayout& layout) {
  if (options.grams == nullptr) return std::nullopt;
  std::optional<BlockGram> sum;
  std::set<std::string> seen;
  for (const TensorUse& use : q.uses) {
    const std::string& activation = Activation(index, use);
    if (!seen.insert(activation).second) continue;
    auto it = options.grams->find(activation);
    if (it == options.grams->end() || it->second.k() != layout.k || it->second.block() != layout.block) {
      return std::nullopt;
    }
    if (!sum) sum = it->second;
    else sum->Merge(it->second);
  }
  return sum;
}

}  // namespace

BlockedWeightWriter::BlockedWeightWriter(onnx::GraphProto* graph, const GraphIndex* index, GraphEditor* editor,
                                         const QuantFormat& format, const BlockedWeightOptions& options,
                                         RewriteStats* stats)
    : graph_(graph), index_(index), editor_(editor), format_(format), options_(options), stats_(stats) {}

void BlockedWeightWriter::ReleaseIfOnlyPlannedReads(const std::string& name, const std::set<int>& planned) {
  if (index_->IsGraphInput(name) || index_->IsGraphOutput(name)) return;
  for (const TensorUse& use : index_->Consumers(name)) {
    if (use.input != 1 || !planned.count(use.node)) return;
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

const BlockedWeight& BlockedWeightWriter::Quantized(const QuantizedTensor& target, const QuantFormat& format,
                                                    const BlockedWeightSearch& search, bool high,
                                                    BlockedWeight* computed) {
  const std::string& name = target.tensor;
  const onnx::TensorProto& w = *index_->Constant(name);
  const std::vector<int64_t> shape = TensorShape(w);
  const std::string key = fmt::format("{}\n{}\n{}", format.name, name, target.block_axis);
  if (options_.cache != nullptr) {
    auto it = options_.cache->find(key);
    if (it != options_.cache->end()) return it->second;
  }
  const std::vector<float> values = TensorToFloats(w);
  if (std::any_of(values.begin(), values.end(), [](float v) { return std::isinf(v); })) {
    log::Warn("weight '{}' holds infinite values; their blocks get scale {}", name, kDegenerateScale);
  }
  const BlockedLayout layout = MakeBlockedLayout(shape, target.block_axis, search.block_size);
  const std::optional<BlockGram> gram = high ? std::nullopt : UsesGram(options_, *index_, target, layout);
  *computed = QuantizeBlockedWeight(values, shape, target.block_axis, gram ? &*gram : nullptr, search);
  if (options_.cache == nullptr) return *computed;
  return options_.cache->emplace(key, std::move(*computed)).first->second;
}

BlockedWeightSearch BlockedWeightWriter::SearchFor(const QuantFormat& format, bool half, bool high) const {
  BlockedWeightSearch search = options_.weight;
  search.half_scales = half;
  search.codec = format.block_codec;
  if (search.codec->fixed_block_size != 0) search.block_size = search.codec->fixed_block_size;
  search.zero_point = search.zero_point && search.codec->zero_points;  // --use_zero_point is int4's
  if (high) search.awq_lite = false;  // round to nearest: the Grams describe the main format's blocks
  return search;
}

std::string BlockedWeightWriter::Add(const QuantizedTensor& target) {
  const std::string& name = target.tensor;
  const int axis = target.block_axis;
  const onnx::TensorProto& w = *index_->Constant(name);
  const bool half = w.data_type() == onnx::TensorProto::FLOAT16;
  const std::vector<int64_t> shape = TensorShape(w);
  const bool high = options_.high_format != nullptr && options_.high_weights.count(name) > 0;
  const QuantFormat& format = high ? *options_.high_format : format_;
  const BlockedWeightSearch search = SearchFor(format, half, high);
  const bool zero_point = search.zero_point;
  const BlockedLayout layout = MakeBlockedLayout(shape, axis, search.block_size);
  BlockedWeight computed;
  const BlockedWeight& q = Quantized(target, format, search, high, &computed);
  stats_->qdq_pairs += 1;
  stats_->weight_tensors += 1;
  stats_->blocked_nodes += static_cast<int>(target.uses.size());
  stats_->high_weights += high;
  stats_->blocks += layout.num_scales();
  stats_->clipped_blocks += q.clipped_blocks;

  // The DequantizeLinear nodes go to the front of the graph (after the weight's Constant node,
  // if it has one), not right before their first consumer. Listed there, ONNX Runtime's default
  // execution order (a depth-first walk back from the outputs, in node-index order) ran every
  // DQ at the start of a run, so all weights were dequantized at once: a 2.25 GiB chain of INT4
  // MatMuls peaked at 2.7 GiB in onnxruntime 1.32 at every level, 0.43 GiB with the DQs first.
  const int producer = index_->Producer(name);
  const int first = producer >= 0 ? producer + 1 : 0;
  std::vector<std::pair<std::string, int64_t>> attributes = {{"axis", axis}, {"block_size", layout.block}};
  std::vector<std::string> inputs;
  if (format.block_codec->element == BlockElement::kInt4) {
    const std::string q_name = Fresh(name + (zero_point ? "_uint4" : "_int4"));
    editor_->AddInitializer(q_name, zero_point ? format.zero_point_storage_type : format.storage_type, shape, q.packed);
    const std::string s_name = Fresh(name + "_scale");
    editor_->AddInitializer(s_name, w.data_type(), q.scale_shape, ScalesAsBytes(q.scales, half));
    inputs = {q_name, s_name};
    if (zero_point) {
      inputs.push_back(Fresh(name + "_zero_point"));
      editor_->AddInitializer(inputs.back(), format.zero_point_storage_type, q.scale_shape, PackUint4(q.zero_points));
    }
  } else {
    inputs = CodedInputs(format, name, w.data_type(), shape, q, first, &attributes);
  }
  const std::string dq_name = Fresh(name + "_DequantizeLinear");
  const std::string out = Fresh(name + "_DequantizeLinear_Output");
  editor_->InsertBefore(first, GraphEditor::MakeNode("DequantizeLinear", dq_name, inputs, out, attributes));
  if (!q.activation_scales.empty()) AddActivationScaling(name, w.data_type(), half, q, target);
  return out;
}

// The other codecs (block_codec.h): the values' initializer and the scale input of the weight's
// DequantizeLinear. int8: float scales, per axis when one block spans K. nvfp4: the scale is
// itself DequantizeLinear(E4M3 codes, global), inserted before node `first`. mxfp8: E8M0 scales.
// Always the standard containers; UseOrtCpuContainers (ort_block_containers.h) makes the ONNX
// Runtime form from them.
std::vector<std::string> BlockedWeightWriter::CodedInputs(const QuantFormat& format, const std::string& name,
                                                          int32_t float_type, const std::vector<int64_t>& shape,
                                                          const BlockedWeight& q, int first,
                                                          std::vector<std::pair<std::string, int64_t>>* attributes) {
  const BlockCodec& codec = *format.block_codec;
  const bool half = float_type == onnx::TensorProto::FLOAT16;
  const std::string q_name = Fresh(name + "_" + std::string(format.name));
  editor_->AddInitializer(q_name, format.storage_type, shape, q.packed);
  const std::string codes(q.scale_codes.begin(), q.scale_codes.end());
  if (codec.scale_code == BlockScaleCode::kFloat) {  // int8: float scales in the weight's type
    const std::string s_name = Fresh(name + "_scale");
    if (shape.size() == 2 && q.layout.num_blocks() == 1) {
      // One block spanning K: the per-axis DequantizeLinear every runtime reads, on the output axis.
      editor_->AddInitializer(s_name, float_type, {static_cast<int64_t>(q.scales.size())},
                              ScalesAsBytes(q.scales, half));
      *attributes = {{"axis", 1 - (*attributes)[0].second}};
    } else {
      editor_->AddInitializer(s_name, float_type, q.scale_shape, ScalesAsBytes(q.scales, half));
    }
    return {q_name, s_name};
  }
  if (codec.scale_code == BlockScaleCode::kE4M3TimesGlobal) {
    const std::string code_name = Fresh(name + "_block_scale_e4m3");
    editor_->AddInitializer(code_name, onnx::TensorProto::FLOAT8E4M3FN, q.scale_shape, codes);
    const std::string global_name = Fresh(name + "_global_scale");
    editor_->AddInitializer(global_name, float_type, {}, ScalesAsBytes({q.global_scale}, half));
    const std::string scale = Fresh(name + "_block_scale");
    const std::string dq_name = Fresh(name + "_block_scale_DequantizeLinear");
    editor_->InsertBefore(first, GraphEditor::MakeNode("DequantizeLinear", dq_name, {code_name, global_name}, scale));
    return {q_name, scale};
  }
  const std::string s_name = Fresh(name + "_scale");
  editor_->AddInitializer(s_name, onnx::TensorProto::FLOAT8E8M0, q.scale_shape, codes);
  attributes->emplace_back("output_dtype", float_type);  // an E8M0 scale does not name the output type
  return {q_name, s_name};
}

// awq_lite: the weight now stores Q(diag(s) W), so each consumer's activation is multiplied by
// 1/s first. One [K] initializer per weight; one Mul per consumer, feeding that consumer only
// (another node reading the same activation, with its own weight and scales, is untouched).
void BlockedWeightWriter::AddActivationScaling(const std::string& name, int32_t type, bool half, const BlockedWeight& q,
                                               const QuantizedTensor& weight) {
  const std::string inv_name = Fresh(name + "_awq_lite_inv_scale");
  editor_->AddInitializer(inv_name, type, {q.layout.k}, ScalesAsBytes(q.activation_scales, half));
  for (const TensorUse& use : weight.uses) {
    const std::string& consumer = index_->node(use.node).name();
    const std::string& activation = Activation(*index_, use);
    const std::string mul_name = Fresh((consumer.empty() ? name : consumer) + "_awq_lite_Mul");
    const std::string out = Fresh(activation + "_awq_lite_scaled");
    editor_->InsertBefore(use.node, GraphEditor::MakeNode("Mul", mul_name, {activation, inv_name}, out));
    activation_rewires_.emplace_back(use.node, out);
    stats_->scale_muls += 1;
  }
  stats_->scaled_weights += 1;
  log::Debug("{} awq_lite: weight '{}' alpha {:.2f}, {} consumer(s) read Mul(activation, 1/s)", format_.name, name,
             q.awq_lite_alpha, weight.uses.size());
}

}  // namespace ptqkit
