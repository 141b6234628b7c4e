#include "pipeline/model_options.h"

#include <fmt/format.h>

#include "base/log.h"
#include "onnx/model_prep.h"
#include "onnx/onnx_library.h"
#include "quant/formats/formats.h"
#include "runtime/model_inputs.h"
#include "pipeline/simplify.h"
#include "ptqkit/error.h"

namespace ptqkit {
namespace {

void OverrideInputShapes(const std::map<std::string, std::vector<int64_t>>& shapes, onnx::GraphProto* graph) {
  for (const auto& [name, dims] : shapes) {
    onnx::ValueInfoProto* input = nullptr;
    for (auto& in : *graph->mutable_input()) {
      if (in.name() == name) input = &in;
    }
    if (input == nullptr || !input->type().has_tensor_type()) {
      throw Error(fmt::format("--override_shapes: '{}' is not a tensor input of the model", name));
    }
    auto* shape = input->mutable_type()->mutable_tensor_type()->mutable_shape();
    if (input->type().tensor_type().has_shape() && shape->dim_size() != static_cast<int>(dims.size())) {
      throw Error(fmt::format("--override_shapes: input '{}' has {} dimension(s), the override gives {}", name,
                              shape->dim_size(), dims.size()));
    }
    shape->clear_dim();
    for (int64_t d : dims) {
      if (d <= 0) throw Error(fmt::format("--override_shapes: input '{}': dimensions must be positive", name));
      shape->add_dim()->set_dim_value(d);
    }
  }
  // Shapes recorded for intermediate tensors may name the old symbols; ONNX Runtime and shape
  // inference re-derive them from the now static inputs.
  if (!shapes.empty()) graph->clear_value_info();
}

void RaiseOpset(int64_t requested, int64_t mode_min_opset, onnx::ModelProto* model) {
  if (requested == 0) return;
  const int64_t current = onnxio::DefaultOpset(*model);
  if (requested < mode_min_opset) {
    log::Warn("--opset {} is below the opset {} this mode needs; writing opset {}", requested, mode_min_opset,
              std::max(current, mode_min_opset));
    return;
  }
  if (requested < current) {
    log::Warn("--opset {} is below the model's opset {}; keeping {} (ptqkit never lowers an opset)", requested,
              current, current);
    return;
  }
  onnxio::UpgradeOpset(model, requested);
}

}  // namespace

PlacementOptions PlacementFor(const QuantizeOptions& o) {
  PlacementOptions p;
  p.op_types_to_quantize = o.op_types_to_quantize;
  p.op_types_to_exclude = o.op_types_to_exclude;
  p.nodes_to_quantize = o.nodes_to_quantize;
  p.nodes_to_exclude = o.nodes_to_exclude;
  p.format = &FindFormat(o.quantize_mode, "--quantize_mode");
  p.runtime = &EffectiveRuntimeForm(o.target_runtime, *p.format);
  // --dq_only (or a runtime that takes integer weights) swaps float weights for stored ones
  p.replaces_weights = o.dq_only || p.runtime->integer_weights;
  p.disable_mha_qdq = o.disable_mha_qdq;
  return p;
}

void ApplyModelOptions(const QuantizeOptions& o, int64_t mode_min_opset, PreparedModel* model,
                       CanonicalForm* canonical) {
  OverrideInputShapes(o.override_shapes, model->proto.mutable_graph());
  if (o.simplify) SimplifyModel(&model->proto, Runtime(o));
  RaiseOpset(o.opset, mode_min_opset, &model->proto);  // first: HardSwish exists from opset 14
  // Weight-only INT4 quantizes no activation and no Conv: the graph stays as given there.
  const bool weight_only = FindFormat(o.quantize_mode, "--quantize_mode").placement.weight_only;
  if (o.canonicalize && !weight_only && HasCanonicalFolds(model->proto)) {
    // The models that have these patterns are CNNs; a copy to compare against is kept up to 1 GiB
    // (a larger one is folded without the comparison rather than held twice).
    constexpr size_t kMaxComparedBytes = size_t{1} << 30;
    if (canonical != nullptr && model->proto.ByteSizeLong() <= kMaxComparedBytes) canonical->before = model->proto;
    const CanonicalizeStats stats = Canonicalize(&model->proto);
    log::Info("canonicalized: {} BatchNormalization and {} channel Mul/Add folded into weights, {} activation(s) fused, "
              "{} Pad(s) folded into Convs",
              stats.batchnorms_folded, stats.affines_folded, stats.activations_fused, stats.pads_folded);
    if (canonical != nullptr) canonical->stats = stats;
  }
  model->inputs = ModelInputSpecs(model->proto.graph());
}

}  // namespace ptqkit
