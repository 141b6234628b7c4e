#include "onnx/session_model.h"

#include <fmt/format.h>

#include "onnx/weight_stash.h"
#include "ptqkit/error.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

namespace ptqkit::onnxio {
onnx::TensorProto WeightPlaceholder(const onnx::TensorProto& tensor) {
  onnx::TensorProto t;
  t.set_name(tensor.name());
  t.set_data_type(tensor.data_type());
  *t.mutable_dims() = tensor.dims();
  MarkExternal(&t, kStashedLocation, 0, tensor.raw_data().size());
  return t;
}

namespace {

// The byte length a placeholder records (0 if none).
uint64_t PlaceholderLength(const onnx::TensorProto& t) {
  for (const auto& e : t.external_data()) {
    if (e.key() == "length") return std::stoull(e.value());
  }
  return 0;
}

WeightView ViewOf(const onnx::TensorProto& t) {
  return {t.name(), t.data_type(), {t.dims().begin(), t.dims().end()}, t.raw_data().data(), t.raw_data().size()};
}

}  // namespace

onnx::ModelProto CopyWithoutInitializers(const onnx::ModelProto& model) {
  // Field by field: a plain copy of the ModelProto would hold every weight twice, and clearing its
  // initializers afterwards keeps their buffers (protobuf keeps cleared elements for reuse).
  onnx::ModelProto light;
  // Only the fields the model has: a saved copy must read back exactly as the original.
  if (model.has_ir_version()) light.set_ir_version(model.ir_version());
  *light.mutable_opset_import() = model.opset_import();
  if (model.has_producer_name()) light.set_producer_name(model.producer_name());
  if (model.has_producer_version()) light.set_producer_version(model.producer_version());
  if (model.has_domain()) light.set_domain(model.domain());
  if (model.has_model_version()) light.set_model_version(model.model_version());
  if (model.has_doc_string()) light.set_doc_string(model.doc_string());
  *light.mutable_metadata_props() = model.metadata_props();
  *light.mutable_training_info() = model.training_info();
  *light.mutable_functions() = model.functions();
  *light.mutable_configuration() = model.configuration();
  const onnx::GraphProto& g = model.graph();
  onnx::GraphProto* lg = light.mutable_graph();
  if (g.has_name()) lg->set_name(g.name());
  if (g.has_doc_string()) lg->set_doc_string(g.doc_string());
  *lg->mutable_node() = g.node();
  *lg->mutable_input() = g.input();
  *lg->mutable_output() = g.output();
  *lg->mutable_value_info() = g.value_info();
  *lg->mutable_sparse_initializer() = g.sparse_initializer();
  *lg->mutable_quantization_annotation() = g.quantization_annotation();
  *lg->mutable_metadata_props() = g.metadata_props();
  return light;
}

onnx::ModelProto CopyWithoutLargeWeights(const onnx::ModelProto& model, size_t min_bytes,
                                         const std::function<onnx::TensorProto(const onnx::TensorProto&)>& placeholder) {
  onnx::ModelProto light = CopyWithoutInitializers(model);
  onnx::GraphProto* lg = light.mutable_graph();
  for (const auto& t : model.graph().initializer()) {
    if (!t.has_raw_data() || t.raw_data().size() <= min_bytes) {
      *lg->add_initializer() = t;
    } else {
      *lg->add_initializer() = placeholder(t);
    }
  }
  return light;
}

bool WeightsGoAsInputs(const onnx::ModelProto& model) {
  size_t bytes = 0;
  for (const auto& t : model.graph().initializer()) {
    if (t.has_raw_data() && t.raw_data().size() > kDefaultViewBytes) bytes += t.raw_data().size();
  }
  return bytes > kWeightsAsInputsAbove;
}

namespace {

// A session model from its light copy (placeholders where the large weights were) and the views of
// those weights.
SessionModel Finish(onnx::ModelProto light, std::vector<WeightView> weights, const std::vector<std::string>& outputs,
                    const std::function<void(onnx::ModelProto*)>& edit, bool always_inputs = false) {
  SessionModel result;
  result.weights = std::move(weights);
  // Past kWeightsAsInputsAbove the large weights become graph inputs, fed from the views at every
  // run: ONNX Runtime reads inputs in place, whereas it copies initializers handed over by address
  // (external or shared), twice the weights at peak. Below, they stay initializers: ONNX Runtime
  // then pre-packs them (faster) and its GEMMs give the same bits for every batch size (the
  // calibration is batch-size independent); with weights as inputs that holds only to rounding.
  size_t viewed_bytes = 0;
  for (const auto& w : result.weights) viewed_bytes += w.size;
  result.weights_as_inputs = always_inputs || viewed_bytes > kWeightsAsInputsAbove;
  std::set<std::string> viewed, declared;
  if (result.weights_as_inputs) {
    for (const auto& w : result.weights) viewed.insert(w.name);
  }
  for (const auto& v : light.graph().input()) declared.insert(v.name());  // IR < 4 lists initializers as inputs
  auto* inits = light.mutable_graph()->mutable_initializer();
  inits->erase(std::remove_if(inits->begin(), inits->end(),
                              [&](const onnx::TensorProto& t) { return viewed.count(t.name()) > 0; }),
               inits->end());
  for (const auto& w : result.weights) {
    if (!result.weights_as_inputs || declared.count(w.name)) continue;
    auto* in = light.mutable_graph()->add_input();
    in->set_name(w.name);
    auto* tt = in->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(w.data_type);
    for (int64_t d : w.dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
  }
  if (!outputs.empty()) {
    light.mutable_graph()->clear_output();
    for (const auto& name : outputs) light.mutable_graph()->add_output()->set_name(name);
  }
  if (edit) edit(&light);
  light.SerializeToString(&result.graph_bytes);
  return result;
}

}  // namespace

SessionModel MakeSessionModel(const onnx::ModelProto& model, const std::vector<std::string>& outputs,
                              size_t min_bytes, const std::function<void(onnx::ModelProto*)>& edit) {
  std::vector<WeightView> weights;
  onnx::ModelProto light = CopyWithoutLargeWeights(model, min_bytes, [&](const onnx::TensorProto& t) {
    weights.push_back(ViewOf(t));
    return WeightPlaceholder(t);
  });
  return Finish(std::move(light), std::move(weights), outputs, edit);
}

SessionModel MakeSessionModelOver(const onnx::ModelProto& light, const onnx::GraphProto& weights, bool all_as_inputs) {
  std::map<std::string, const onnx::TensorProto*> by_name;
  for (const auto& t : weights.initializer()) by_name[t.name()] = &t;
  // The session's copy: with all_as_inputs the light model's own large initializers are viewed
  // (placeholders in the copy, never copied); placeholders already there are views of `weights`.
  std::vector<WeightView> views;
  std::set<std::string> own;
  onnx::ModelProto copy = CopyWithoutLargeWeights(
      light, all_as_inputs ? kDefaultViewBytes : std::numeric_limits<size_t>::max(), [&](const onnx::TensorProto& t) {
        views.push_back(ViewOf(t));
        own.insert(t.name());
        return WeightPlaceholder(t);
      });
  for (const auto& t : light.graph().initializer()) {
    if (!IsStashed(t) || own.count(t.name())) continue;
    auto it = by_name.find(t.name());
    if (it == by_name.end() || it->second->raw_data().size() != PlaceholderLength(t)) {
      throw Error(fmt::format("internal: the placeholder of initializer '{}' has no matching weight", t.name()));
    }
    views.push_back(ViewOf(*it->second));
  }
  return Finish(std::move(copy), std::move(views), {}, nullptr, all_as_inputs);
}

}  // namespace ptqkit::onnxio
