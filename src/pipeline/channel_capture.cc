#include "pipeline/channel_capture.h"

#include <memory>
#include <set>

#include "onnx/session_model.h"

namespace ptqkit {


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
    if (!FoldChannels(v, tensor_axis.at(v.name), &result[v.name])) bad.insert(v.name);
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
