// The weight-only placement profile (placement.h): which MatMul/Gemm weights are quantized in
// blocks, and along which axis.
#include <fmt/format.h>

#include <map>
#include <utility>

#include "onnx/graph_editor.h"
#include "onnx/op_traits.h"
#include "quant/placement/placement.h"
#include "quant/placement/selectors.h"

namespace ptqkit {
namespace {

// Why `node` (a MatMul/Gemm) cannot have its weight quantized, or "" when it can; sets *axis.
std::string Ineligible(const GraphIndex& index, const onnx::NodeProto& node, int* axis) {
  if (node.input_size() < 2) return "has no weight input";
  const onnx::TensorProto* w = index.Constant(node.input(1));
  if (w == nullptr) return "weight (input B) is not a constant";
  if (std::string why = WhyNotReplaceable(index, node.input(1)); !why.empty()) return why;
  if (w->data_type() != onnx::TensorProto::FLOAT && w->data_type() != onnx::TensorProto::FLOAT16) {
    return fmt::format("weight type {} is not float32/float16", w->data_type());
  }
  if (w->has_data_location() && w->data_location() == onnx::TensorProto::EXTERNAL) {
    return "weight is stored as external data that was not loaded";
  }
  const int rank = w->dims_size();
  if (rank < 2) return fmt::format("weight has rank {} (needs >= 2)", rank);
  for (auto d : w->dims()) {
    if (d <= 0) return "weight has an empty dimension";
  }
  const WeightLayout layout = WeightLayoutOf(node, *w);
  if (layout.in_axis < 0) return fmt::format("{} weight has rank {}", node.op_type(), rank);
  if (layout.transposed_input) return "Gemm with transA=1 (transposed activation) is not handled";
  *axis = layout.in_axis;
  return "";
}

// --quantize_activations: input A of planned node `n` (index `node`, weight K axis `axis`) joins
// `activations` when TensorRT's dynamic quantizer can take it: K a multiple of the format's block
// and float32 values (the weight's type stands for the activation's).
void PlanActivation(const GraphIndex& index, const onnx::NodeProto& n, int node, int axis, const QuantFormat& format,
                    std::map<std::string, QuantizedTensor>* activations) {
  const onnx::TensorProto& w = *index.Constant(n.input(1));
  const int64_t block = format.block_codec->fixed_block_size;
  if (w.data_type() != onnx::TensorProto::FLOAT || block <= 0 || w.dims(axis) % block != 0) return;
  QuantizedTensor& q = (*activations)[n.input(0)];
  q.tensor = n.input(0);
  q.dynamic_blocks = true;
  q.uses.push_back({node, 0});
}

}  // namespace

Placement PlanWeightOnlyPlacement(const GraphIndex& index, const PlacementOptions& options) {
  const NodeSelector include(index, options.nodes_to_quantize, options.op_types_to_quantize, "--nodes_to_quantize",
                             "--op_types_to_quantize", options.matched_selectors);
  const NodeSelector exclude(index, options.nodes_to_exclude, options.op_types_to_exclude, "--nodes_to_exclude",
                             "--op_types_to_exclude", options.matched_selectors);
  Placement plan;
  // One entry per (weight, K axis): consumers sharing a weight share its DequantizeLinear, and the
  // search weighs its error on all their activations.
  std::map<std::pair<std::string, int>, QuantizedTensor> weights;
  std::map<std::string, QuantizedTensor> activations;
  for (int i = 0; i < index.num_nodes(); ++i) {
    const onnx::NodeProto& n = index.node(i);
    if (!IsLinearOp(n) || IsConvolution(n)) continue;  // MatMul and Gemm
    std::string why;
    int axis = 0;
    if (!include.empty() && !include.Selects(i)) {
      why = "not selected by --nodes_to_quantize / --op_types_to_quantize";
    } else if (exclude.Selects(i)) {
      why = "excluded by " + exclude.Why(i);
    } else if (auto kept = options.kept_in_float.find(n.name()); kept != options.kept_in_float.end()) {
      why = kept->second;
    } else {
      why = Ineligible(index, n, &axis);
    }
    if (!why.empty()) {
      plan.float_reasons[i] = why;
      continue;
    }
    if (options.quantize_activations) PlanActivation(index, n, i, axis, *options.format, &activations);
    QuantizedTensor& q = weights[{n.input(1), axis}];
    q.tensor = n.input(1);
    q.is_weight = true;
    q.block_axis = axis;
    q.uses.push_back({i, 1});
    plan.quantized_nodes.push_back(i);
  }
  for (auto& [key, q] : weights) plan.tensors.push_back(std::move(q));
  for (auto& [name, q] : activations) plan.tensors.push_back(std::move(q));
  return plan;
}

}  // namespace ptqkit
