#include "pipeline/channel_capture.h"

#include <cmath>
#include <memory>
#include <set>

#include "onnx/session_model.h"

namespace ptqkit {

std::vector<double> ChannelStatistics::Mean() const {
  std::vector<double> mean(sum.size(), 0.0);
  if (values_per_channel == 0) return mean;
  for (size_t c = 0; c < sum.size(); ++c) mean[c] = sum[c] / static_cast<double>(values_per_channel);
  return mean;
}

namespace {

// Folds one float32 tensor into `stats` along `axis`; false when the shape does not fit.
bool Fold(const OutputView& view, int axis, ChannelStatistics* stats) {
  const int rank = static_cast<int>(view.shape.size());
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return false;
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= view.shape[d];
  for (int d = axis + 1; d < rank; ++d) inner *= view.shape[d];
  const int64_t channels = view.shape[axis];
  if (stats->sum.empty()) {
    stats->sum.assign(static_cast<size_t>(channels), 0.0);
    stats->absmax.assign(static_cast<size_t>(channels), 0.0f);
  }
  if (static_cast<int64_t>(stats->sum.size()) != channels) return false;
  const auto* p = static_cast<const float*>(view.data);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t c = 0; c < channels; ++c) {
      double s = 0.0;
      float m = stats->absmax[c];
      for (int64_t i = 0; i < inner; ++i, ++p) {
        const float v = *p;
        if (!std::isfinite(v)) continue;  // calibration warns about NaN/Inf elsewhere
        s += v;
        m = std::fabs(v) > m ? std::fabs(v) : m;
      }
      stats->sum[c] += s;
      stats->absmax[c] = m;
    }
  }
  stats->values_per_channel += outer * inner;
  stats->shape = view.shape;
  return true;
}

}  // namespace

std::map<std::string, ChannelStatistics> CaptureChannelStatistics(const onnx::ModelProto& model,
                                                                  const CalibrationSet& data,
                                                                  const std::map<std::string, int>& tensor_axis,
                                                                  int64_t batch_size, int64_t num_batches,
                                                                  const RuntimeOptions& runtime) {
  std::map<std::string, ChannelStatistics> result;
  std::set<std::string> produced, graph_inputs;
  for (const auto& n : model.graph().node()) {
    for (const auto& o : n.output()) produced.insert(o);
  }
  for (const auto& v : model.graph().input()) graph_inputs.insert(v.name());
  // Node outputs come out of the session; graph inputs (a first Conv reading the image) straight
  // from the batches.
  std::vector<std::string> outputs, from_inputs;
  for (const auto& [t, axis] : tensor_axis) {
    if (produced.count(t)) outputs.push_back(t);
    else if (graph_inputs.count(t)) from_inputs.push_back(t);
  }
  if (outputs.empty() && from_inputs.empty()) return result;
  std::unique_ptr<InferenceSession> session;
  std::vector<std::string> run_outputs;
  if (!outputs.empty()) {
    session = std::make_unique<InferenceSession>(onnxio::MakeSessionModel(model, outputs), runtime);
    for (const auto& t : outputs) {
      if (session->OutputType(t) == DataType::kFloat) run_outputs.push_back(t);
    }
  }
  std::set<std::string> bad;
  const auto fold = [&](const OutputView& v) {
    if (bad.count(v.name) || v.dtype != DataType::kFloat) return;
    if (!Fold(v, tensor_axis.at(v.name), &result[v.name])) bad.insert(v.name);
  };
  const int64_t batches = num_batches > 0 ? num_batches : data.NumBatches(batch_size);
  for (int64_t b = 0; b < batches; ++b) {
    const Batch batch = data.ReadBatch(b, batch_size);
    for (const auto& t : from_inputs) {
      auto it = batch.find(t);
      if (it == batch.end()) continue;
      const HostTensor& in = it->second;
      fold(OutputView{t, in.dtype, in.shape, in.bytes.data(), in.NumElements()});
    }
    if (!run_outputs.empty()) {
      session->RunBatch(batch, run_outputs, [&](const std::vector<OutputView>& views) {
        for (const auto& v : views) fold(v);
      });
    }
  }
  for (const auto& t : bad) result.erase(t);
  return result;
}

}  // namespace ptqkit
