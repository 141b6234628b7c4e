#include "onnx/onnx_library.h"

#include <fmt/format.h>

#include <algorithm>
#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>
#include <onnx/version_converter/convert.h>

#include "onnx/group_norm_upgrade.h"
#include "onnx/model_prep.h"
#include "onnx/weight_stash.h"
#include "ptqkit/error.h"

namespace ptqkit::onnxio {
namespace {

// The library's messages can span lines and carry its source locations; keep them to one line.
std::string OneLine(std::string s) {
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

// The IR version that came with each opset (ONNX's versioning table): a model upgraded to an opset
// must declare at least that IR, or ONNX Runtime and the checker refuse types the opset brought
// (FLOAT8 at opset 19, INT4 at opset 21).
int64_t MinIrVersion(int64_t opset) {
  if (opset >= 21) return 10;
  if (opset >= 19) return 9;
  if (opset >= 15) return 8;
  return 7;
}

}  // namespace

int64_t UpgradeOpset(onnx::ModelProto* model, int64_t target) {
  const int64_t from = DefaultOpset(*model);
  // GroupNormalization of opsets 18-20 is deprecated (the checker refuses a model written with it):
  // such a model goes to 21 whatever the target (group_norm_upgrade.h).
  if (from < 21 && HasGroupNormalization(model->graph())) target = std::max<int64_t>(target, 21);
  if (from >= target) return from;
  if (from < 21 && target >= 21) WidenGroupNormalizationParameters(model);
  WeightStash stash(model);  // the converter copies the whole model: keep the weights out of it
  onnx::ModelProto converted;
  try {
    converted = onnx::version_conversion::ConvertVersion(*model, static_cast<int>(target));
  } catch (const std::exception& e) {
    throw Error(fmt::format("cannot upgrade the model from opset {} to {}: the ONNX version converter says: {}",
                            from, target, OneLine(e.what())),
                Error::Kind::kUnsupported);
  }
  // Only the graph and the opset imports are the converter's: everything else stays the user's.
  model->mutable_graph()->Swap(converted.mutable_graph());
  model->mutable_opset_import()->Swap(converted.mutable_opset_import());
  // Not the converter's IR: it stamps its own newest one, which ONNX Runtime may not read yet.
  model->set_ir_version(std::max(model->ir_version(), MinIrVersion(target)));
  stash.RestoreInto(model);
  return from;
}

onnx::ModelProto InferShapes(onnx::ModelProto* model) {
  WeightStash stash(model);
  onnx::ModelProto inferred = *model;
  onnx::ShapeInferenceOptions options;
  options.check_type = false;
  options.error_mode = 0;  // keep going past ops the library cannot infer
  options.enable_data_propagation = true;
  try {
    onnx::shape_inference::InferShapes(inferred, onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception& e) {
    throw Error(fmt::format("ONNX shape inference failed on the model: {}", OneLine(e.what())));
  }
  return inferred;
}

void CheckOutputModel(onnx::ModelProto* model, const std::string& what) {
  std::vector<onnx::TypeProto_Tensor*> shapeless;
  for (auto* values : {model->mutable_graph()->mutable_input(), model->mutable_graph()->mutable_output()}) {
    for (auto& v : *values) {
      if (v.type().has_tensor_type() && !v.type().tensor_type().has_shape()) {
        shapeless.push_back(v.mutable_type()->mutable_tensor_type());
      }
    }
  }
  for (auto* t : shapeless) t->mutable_shape();
  std::string failure;
  try {
    onnx::checker::check_model(*model, /*full_check=*/false);
  } catch (const std::exception& e) {
    failure = e.what();
  }
  for (auto* t : shapeless) t->clear_shape();
  if (!failure.empty()) {
    throw Error(fmt::format("internal: the model ptqkit built for {} fails the ONNX checker: {}", what,
                            OneLine(failure)));
  }
}

}  // namespace ptqkit::onnxio
