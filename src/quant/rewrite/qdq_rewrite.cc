#include "quant/rewrite/qdq_rewrite.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <set>

#include "onnx/graph_editor.h"
#include "onnx/graph_index.h"
#include "onnx/subgraphs.h"
#include "onnx/weight_stash.h"
#include "ptqkit/error.h"
#include "quant/rewrite/dynamic_block_activation.h"
#include "quant/rewrite/dynamic_matmul.h"
#include "quant/formats/numerics.h"
#include "quant/rewrite/qdq_blocked_weight.h"

namespace ptqkit {
namespace {

class Rewriter {
 public:
  Rewriter(onnx::GraphProto* graph, const GraphIndex* outer, const RewriteOptions& options)
      : graph_(graph),
        index_(*graph_, outer),
        options_(options),
        editor_(graph_, options.reserved_names) {
    UseFormat(*options.format);
    if (format_->block_codec != nullptr) {
      blocked_ = std::make_unique<BlockedWeightWriter>(graph_, &index_, &editor_, *format_, options_.blocked, &stats_);
    }
  }

  RewriteStats Run(const Placement& plan, const std::map<std::string, float>& amax) {
    std::map<std::string, std::set<int>> blocked_readers;  // blocked weight -> the nodes planned to read it
    for (const auto& q : plan.tensors) {
      for (const auto& use : q.uses) {
        if (q.block_axis >= 0) blocked_readers[q.tensor].insert(use.node);
      }
    }
    std::vector<std::pair<TensorUse, std::string>> rewires;
    for (size_t i = 0; i < plan.tensors.size(); ++i) {
      const QuantizedTensor& q = plan.tensors[i];
      UseFormat(q.format != nullptr ? *q.format : *options_.format);  // --mixed_precision int8,fp8
      if (q.embedding) {  // rewrites its Gathers itself: nothing to rewire
        AddEmbedding(q);
        continue;
      }
      const std::string dq_out = q.block_axis >= 0   ? AddBlockedWeight(q)
                                 : q.dynamic_blocks ? AddDynamicBlockActivation(q, amax)
                                 : q.is_weight      ? AddWeight(q)
                                                    : AddActivation(q, amax);
      for (const auto& use : q.uses) rewires.emplace_back(use, dq_out);
      // A weight-only plan lists each weight's entries together: after the last one its float values
      // are read no more, and holding them to the end would add every packed weight on top of every
      // float one (a 2 GiB model's peak).
      const bool last_of_weight = i + 1 == plan.tensors.size() || plan.tensors[i + 1].tensor != q.tensor;
      if (q.block_axis >= 0 && last_of_weight) blocked_->ReleaseIfOnlyPlannedReads(q.tensor, blocked_readers[q.tensor]);
    }
    for (const auto& [use, name] : rewires) graph_->mutable_node(use.node)->set_input(use.input, name);
    if (blocked_) {
      for (const auto& [node, name] : blocked_->activation_rewires()) graph_->mutable_node(node)->set_input(0, name);
    }
    editor_.Splice();
    // Blocked weights are always stored quantized, like dq_only ones.
    if (options_.dq_only || !blocked_readers.empty()) DropUnusedWeights(plan);
    if (options_.runtime->dynamic_matmuls) stats_.dynamic_matmuls = WriteDynamicMatMuls(graph_, options_.reserved_names);
    return stats_;
  }

 private:
  std::string Fresh(const std::string& base) { return editor_.Fresh(base); }

  // The format the next tensor is written in, and its grid's largest values.
  void UseFormat(const QuantFormat& format) {
    format_ = &format;
    qmax_ = format.qmax;
    weight_qmax_ = options_.reduce_range && format.reduced_range_qmax > 0 ? format.reduced_range_qmax : qmax_;
  }

  static int FirstUse(const QuantizedTensor& q) {
    int first = q.uses.front().node;
    for (const auto& u : q.uses) first = std::min(first, u.node);
    return first;
  }

  void AddFloatInit(const std::string& name, const std::vector<float>& values, bool scalar) {
    editor_.AddInitializer(name, onnx::TensorProto::FLOAT,
                           scalar ? std::vector<int64_t>{} : std::vector<int64_t>{static_cast<int64_t>(values.size())},
                           std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
  }

  // Raw bytes of the format's storage type (one value a byte).
  void AddQuantizedInit(const std::string& name, const std::vector<int64_t>& dims, const std::string& bytes) {
    editor_.AddInitializer(name, format_->storage_type, dims, bytes);
  }

  // Zero points are 0, the byte 0x00 in every symmetric format (FP8 +0.0 too).
  void AddZeroPoint(const std::string& name, size_t channels, bool scalar) {
    AddQuantizedInit(name, scalar ? std::vector<int64_t>{} : std::vector<int64_t>{static_cast<int64_t>(channels)},
                     std::string(channels, '\0'));
  }

  // A Q or DQ node; `inputs` are (x, scale[, zero point]); axis -1: per tensor. A format without
  // zero points names its storage type on the QuantizeLinear (output_dtype, opset 21).
  enum class QdqKind { kQuantize, kDequantize };
  onnx::NodeProto MakeNode(QdqKind kind, const std::string& name, const std::vector<std::string>& inputs,
                           const std::string& output, int axis) const {
    std::vector<std::pair<std::string, int64_t>> attributes;
    if (axis >= 0) attributes.emplace_back("axis", axis);
    if (format_->zero_point_free && kind == QdqKind::kQuantize) {
      attributes.emplace_back("output_dtype", format_->storage_type);
    }
    const char* op = kind == QdqKind::kQuantize ? "QuantizeLinear" : "DequantizeLinear";
    return GraphEditor::MakeNode(op, name, inputs, output, attributes);
  }

  // (x, scale, zero point), or (x, scale) for a format without zero points.
  std::vector<std::string> QdqInputs(const std::string& x, const std::string& scale,
                                     const std::string& zero_point) const {
    if (format_->zero_point_free) return {x, scale};
    return {x, scale, zero_point};
  }

  // A fresh zero-point initializer for `base` (empty name: the format has none).
  std::string ZeroPointFor(const std::string& base, size_t channels, bool scalar) {
    if (format_->zero_point_free) return "";
    const std::string zp = Fresh(base + "_zero_point");
    AddZeroPoint(zp, channels, scalar);
    return zp;
  }

  // Q -> DQ on `source` with the given scale and zero-point initializers; returns the DQ output.
  std::string AddPair(const std::string& base, const std::string& source, const std::string& scale,
                      const std::string& zero_point, int axis, int before) {
    const std::string q_out = Fresh(base + "_QuantizeLinear_Output");
    const std::string dq_out = Fresh(base + "_DequantizeLinear_Output");
    editor_.InsertBefore(before, MakeNode(QdqKind::kQuantize, Fresh(base + "_QuantizeLinear"),
                                          QdqInputs(source, scale, zero_point), q_out, axis));
    editor_.InsertBefore(before, MakeNode(QdqKind::kDequantize, Fresh(base + "_DequantizeLinear"),
                                          QdqInputs(q_out, scale, zero_point), dq_out, axis));
    ++stats_.qdq_pairs;
    return dq_out;
  }

  std::string AddActivation(const QuantizedTensor& q, const std::map<std::string, float>& amax) {
    auto it = amax.find(q.tensor);
    if (it == amax.end()) throw Error(fmt::format("internal: no calibrated range for tensor '{}'", q.tensor));
    const std::string scale = Fresh(q.tensor + "_scale");
    if (options_.runtime->unsigned_activations) {
      // UINT8: all 255 steps for a tensor that is never negative, else the symmetric grid around 128.
      constexpr float kUnsignedSteps = 255.0f;
      AddFloatInit(scale, {ScaleFromAmax(it->second, q.non_negative ? kUnsignedSteps : qmax_, q.tensor)}, true);
      const std::string zp = Fresh(q.tensor + "_zero_point");
      editor_.AddInitializer(zp, onnx::TensorProto::UINT8, {}, std::string(1, q.non_negative ? '\0' : '\x80'));
      return AddPair(q.tensor, q.tensor, scale, zp, -1, FirstUse(q));
    }
    AddFloatInit(scale, {ScaleFromAmax(it->second, qmax_, q.tensor)}, true);
    const std::string zp = ZeroPointFor(q.tensor, 1, true);
    return AddPair(q.tensor, q.tensor, scale, zp, -1, FirstUse(q));
  }

  // nvfp4/mxfp8 activations: block scales computed at run time; only nvfp4's global scale comes
  // from a calibrated amax.
  std::string AddDynamicBlockActivation(const QuantizedTensor& q, const std::map<std::string, float>& amax) {
    const BlockCodec* codec = format_->block_codec;
    if (codec == nullptr || codec->trt_dynamic_quantize == nullptr) {
      throw Error(fmt::format("internal: activation '{}' is planned in dynamic blocks but --quantize_mode {} has none",
                              q.tensor, format_->name));
    }
    float calibrated = 0.0f;
    if (codec->scale_code == BlockScaleCode::kE4M3TimesGlobal) {
      auto it = amax.find(q.tensor);
      if (it == amax.end()) throw Error(fmt::format("internal: no calibrated range for tensor '{}'", q.tensor));
      calibrated = it->second;
    }
    ++stats_.qdq_pairs;
    ++stats_.dynamic_activations;
    return AddDynamicBlockQdq(&editor_, *format_, q.tensor, calibrated, FirstUse(q), options_.blocked.trt_activations);
  }

  std::string AddBlockedWeight(const QuantizedTensor& q) {
    if (!blocked_) {
      throw Error(fmt::format("internal: weight '{}' is planned in blocks but --quantize_mode {} has no block codec",
                              q.tensor, format_->name));
    }
    return blocked_->Add(q);
  }

  std::string AddWeight(const QuantizedTensor& q) {
    const onnx::TensorProto* w = &WeightValues(*index_.Constant(q.tensor), options_);
    const std::vector<float> values = TensorToFloats(*w);
    const std::vector<int64_t> shape = TensorShape(*w);
    std::vector<float> scales;
    if (q.axis >= 0) {
      for (float a : AbsMaxPerChannel(values.data(), shape, q.axis)) {
        scales.push_back(ScaleFromAmax(a, weight_qmax_, q.tensor));
      }
    } else {
      float a = 0.0f;
      for (float v : values) a = std::max(a, std::abs(v));
      scales.push_back(ScaleFromAmax(a, weight_qmax_, q.tensor));
    }
    const std::string base = q.tensor;
    const std::string scale = Fresh(base + "_scale");
    AddFloatInit(scale, scales, q.axis < 0);
    const std::string zp = ZeroPointFor(base, scales.size(), q.axis < 0);
    ++stats_.weight_tensors;
    const int before = FirstUse(q);
    if (!options_.dq_only) return AddPair(base, q.tensor, scale, zp, q.axis, before);
    const std::string qname = Fresh(base + "_quantized");
    AddQuantizedInit(qname, shape, QuantizeWeight(values, shape, q.axis, scales));
    const std::string dq_out = Fresh(base + "_DequantizeLinear_Output");
    editor_.InsertBefore(before, MakeNode(QdqKind::kDequantize, Fresh(base + "_DequantizeLinear"),
                                          QdqInputs(qname, scale, zp), dq_out, q.axis));
    ++stats_.qdq_pairs;
    return dq_out;
  }

  // An embedding table as INT8 rows with one scale per row; each Gather reading it becomes
  //   Mul(Cast<float>(Gather(rows, ids)), Gather(row_scales [V, 1], ids))
  // (the Gather node itself turns into the Mul: its name and output stay), so only the gathered
  // rows are dequantized, and the same values as DequantizeLinear(rows, scales, axis 0) give.
  void AddEmbedding(const QuantizedTensor& q) {
    const onnx::TensorProto* w = &WeightValues(*index_.Constant(q.tensor), options_);
    const std::vector<float> values = TensorToFloats(*w);
    const std::vector<int64_t> shape = TensorShape(*w);
    std::vector<float> scales;
    for (float a : AbsMaxPerChannel(values.data(), shape, 0)) scales.push_back(ScaleFromAmax(a, weight_qmax_, q.tensor));
    const std::string rows = Fresh(q.tensor + "_quantized");
    AddQuantizedInit(rows, shape, QuantizeWeight(values, shape, 0, scales));
    const std::string row_scales = Fresh(q.tensor + "_row_scale");
    editor_.AddInitializer(row_scales, onnx::TensorProto::FLOAT, {shape[0], 1},
                           std::string(reinterpret_cast<const char*>(scales.data()), scales.size() * sizeof(float)));
    for (const auto& use : q.uses) {
      onnx::NodeProto* gather = graph_->mutable_node(use.node);
      const std::string ids = gather->input(1);
      const std::string& out = gather->output(0);
      const std::string picked = Fresh(out + "_rows"), as_float = Fresh(out + "_rows_float");
      const std::string picked_scales = Fresh(out + "_row_scales");
      editor_.InsertBefore(use.node, GraphEditor::MakeNode("Gather", Fresh(gather->name() + "_rows"), {rows, ids}, picked));
      editor_.InsertBefore(use.node, GraphEditor::MakeNode("Cast", Fresh(gather->name() + "_Cast"), {picked}, as_float,
                                                           {{"to", onnx::TensorProto::FLOAT}}));
      editor_.InsertBefore(use.node, GraphEditor::MakeNode("Gather", Fresh(gather->name() + "_row_scales"),
                                                           {row_scales, ids}, picked_scales));
      gather->set_op_type("Mul");
      gather->clear_attribute();
      gather->set_input(0, as_float);
      gather->set_input(1, picked_scales);
    }
    ++stats_.weight_tensors;
    ++stats_.int8_embeddings;
  }

  // The stored weight bytes, computed with the format's scalar reference numerics (bit-exact with
  // onnxruntime's QuantizeLinear).
  std::string QuantizeWeight(const std::vector<float>& values, const std::vector<int64_t>& shape, int axis,
                             const std::vector<float>& scales) const {
    std::string bytes(values.size(), '\0');
    // Stride of `axis` in the row-major layout: element i belongs to channel (i / inner) % channels.
    int64_t inner = 1;
    if (axis >= 0) {
      for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) inner *= shape[d];
    }
    if (format_->quantize_all) {  // the same bits, vectorised
      format_->quantize_all(values.data(), static_cast<int64_t>(values.size()), scales.data(),
                           static_cast<int64_t>(scales.size()), inner, reinterpret_cast<uint8_t*>(bytes.data()));
      return bytes;
    }
    for (size_t i = 0; i < values.size(); ++i) {
      const float s = axis >= 0 ? scales[(i / inner) % scales.size()] : scales[0];
      bytes[i] = static_cast<char>(format_->quantize(values[i], s));
    }
    return bytes;
  }

  // With dq_only the float weights are replaced by quantized copies; the originals that nothing
  // reads any more go (placement never plans a weight that is also a graph input: WhyNotReplaceable).
  void DropUnusedWeights(const Placement& plan) {
    std::set<std::string> replaced;
    for (const auto& q : plan.tensors) {
      if (q.is_weight) replaced.insert(q.tensor);
    }
    editor_.RemoveUnread(replaced);
  }

  onnx::GraphProto* graph_;
  GraphIndex index_;
  RewriteOptions options_;
  GraphEditor editor_;
  const QuantFormat* format_ = nullptr;  // the current tensor's (UseFormat)
  float qmax_ = 0.0f;
  float weight_qmax_ = 0.0f;  // qmax_, or the reduced range (63 for INT8) with reduce_range
  RewriteStats stats_;
  std::unique_ptr<BlockedWeightWriter> blocked_;  // a weight-only format's; uses editor_ and stats_
};

}  // namespace

const onnx::TensorProto& WeightValues(const onnx::TensorProto& t, const RewriteOptions& options) {
  if (!onnxio::IsStashed(t)) return t;
  if (options.weight_source) {
    auto it = options.weight_source->find(t.name());
    if (it != options.weight_source->end()) return *it->second;
  }
  throw Error(fmt::format("internal: weight '{}' is a placeholder and the rewrite has no source for it", t.name()));
}

RewriteStats InsertQdq(onnx::ModelProto* model, const Placement& plan, const std::map<std::string, float>& activation_amax,
                       const RewriteOptions& options) {
  const RewriteStats stats = Rewriter(model->mutable_graph(), nullptr, options).Run(plan, activation_amax);
  if (stats.dynamic_activations > 0 && options.blocked.trt_activations) ImportTrtDomain(model);
  return stats;
}

RewriteStats InsertQdqInSubgraph(onnx::GraphProto* graph, const GraphIndex* outer, const Placement& plan,
                                 const std::map<std::string, float>& activation_amax, const RewriteOptions& options) {
  return Rewriter(graph, outer, options).Run(plan, activation_amax);
}

}  // namespace ptqkit
