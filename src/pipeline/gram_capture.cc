#include "pipeline/gram_capture.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/progress.h"
#include "onnx/float16.h"
#include "onnx/session_model.h"
#include "ptqkit/error.h"

namespace ptqkit {

GramCapture::GramCapture(const onnx::ModelProto& model, const GraphIndex& index, const Placement& plan,
                         int64_t block_size, bool grams) {
  for (const auto& q : plan.tensors) {
    if (q.dynamic_blocks) {
      amax_.emplace(q.tensor, 0.0f);
      Observe(index, q.tensor);
      continue;
    }
    if (!grams) continue;
    const BlockedLayout layout = MakeBlockedLayout(TensorShape(*index.Constant(q.tensor)), q.block_axis, block_size);
    for (const auto& use : q.uses) {
      const std::string& activation = index.node(use.node).input(0);
      if (grams_.count(activation)) continue;
      grams_.emplace(activation, BlockGram(layout.k, layout.block));
      Observe(index, activation);
    }
  }
  model_ = &model;
}

int64_t GramCapture::Run(const CalibrationData& data, const RuntimeOptions& runtime,
                         const std::function<void(int64_t, int64_t)>& progress, std::vector<std::string>* providers) {
  for (const auto& [name, c] : constants_) AddConstant(name, *c);
  InferenceSession session(onnxio::MakeSessionModel(*model_, from_outputs_), runtime);
  *providers = session.providers();
  std::vector<std::string> run_outputs = from_outputs_;
  if (run_outputs.empty()) run_outputs.push_back(session.output_names().front());  // still runs the model once
  progress::Stage stage("calibrating", "batches", data.num_batches);
  for (int64_t b = 0; b < data.num_batches; ++b) {
    const Batch batch = data.set.ReadBatch(b, data.batch_size);
    for (const auto& t : from_inputs_) {
      const HostTensor& in = batch.at(t);
      Add(t, in.dtype, in.shape, in.bytes.data(), in.NumElements());
    }
    session.Run(batch, run_outputs, [&](const OutputView& v) {
      if (observed_.count(v.name)) Add(v.name, v.dtype, v.shape, v.data, v.num_elements);
    });
    if (progress) progress(b + 1, data.num_batches);
    stage.Set(b + 1);
  }
  return std::min(data.set.num_samples(), data.num_batches * data.batch_size);
}

void GramCapture::Observe(const GraphIndex& index, const std::string& tensor) {
  if (!observed_.insert(tensor).second) return;
  if (const onnx::TensorProto* c = index.Constant(tensor)) {
    constants_.emplace_back(tensor, c);
  } else if (index.IsGraphInput(tensor)) {
    from_inputs_.push_back(tensor);
  } else {
    from_outputs_.push_back(tensor);
  }
}

void GramCapture::AddConstant(const std::string& name, const onnx::TensorProto& c) {
  const std::vector<float> v = TensorToFloats(c);
  Add(name, DataType::kFloat, TensorShape(c), v.data(), static_cast<int64_t>(v.size()));
}

void GramCapture::Add(const std::string& name, DataType dtype, const std::vector<int64_t>& shape, const void* data,
                      int64_t count) {
  auto gram = grams_.find(name);
  if (dtype != DataType::kFloat && dtype != DataType::kFloat16) {
    throw Error(fmt::format("activation '{}' of a quantized MatMul/Gemm is {}, not a float tensor", name,
                            DataTypeName(dtype)));
  }
  if (gram != grams_.end() && (shape.empty() || shape.back() != gram->second.k())) {
    throw Error(fmt::format("activation '{}' has shape {} at run time; its MatMul/Gemm weight needs a last "
                            "dimension of {}",
                            name, ShapeToString(shape), gram->second.k()));
  }
  const float* x = static_cast<const float*>(data);
  if (dtype == DataType::kFloat16) {
    scratch_.resize(static_cast<size_t>(count));
    const auto* h = static_cast<const uint16_t*>(data);
    for (int64_t i = 0; i < count; ++i) scratch_[static_cast<size_t>(i)] = HalfToFloat(h[i]);
    x = scratch_.data();
  }
  if (gram != grams_.end()) gram->second.AddRows(x, count / gram->second.k());
  if (auto a = amax_.find(name); a != amax_.end()) {
    for (int64_t i = 0; i < count; ++i) {
      if (std::isfinite(x[i])) a->second = std::max(a->second, std::abs(x[i]));
    }
  }
}

}  // namespace ptqkit
