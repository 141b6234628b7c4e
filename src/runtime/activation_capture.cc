#include "runtime/activation_capture.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <thread>

#include "base/log.h"
#include "base/progress.h"
#include "onnx/model_io.h"
#include "onnx/onnx_library.h"
#include "onnx/session_model.h"
#include "onnx/subgraphs.h"
#include "onnx/float16.h"
#include "runtime/model_inputs.h"
#include "ptqkit/error.h"

namespace ptqkit {
namespace {

// Folds one tensor's values into its statistics, converting FP16 through a scratch buffer.
void Observe(calib::TensorStatistics* stats, DataType dtype, const void* data, int64_t count, std::vector<float>* scratch) {
  if (dtype == DataType::kFloat) {
    stats->Add(static_cast<const float*>(data), static_cast<size_t>(count));
  } else if (dtype == DataType::kFloat16) {
    scratch->resize(static_cast<size_t>(count));
    const auto* h = static_cast<const uint16_t*>(data);
    for (int64_t i = 0; i < count; ++i) (*scratch)[i] = HalfToFloat(h[i]);
    stats->Add(scratch->data(), scratch->size());
  }
}

bool IsFloat(DataType t) { return t == DataType::kFloat || t == DataType::kFloat16; }

size_t CollectorThreads() { return std::max(1u, std::min(4u, std::thread::hardware_concurrency())); }

// Folds one batch's captured tensors into their statistics. ONNX Runtime uses every core while it
// runs, the collectors afterwards used only one; tensors are dealt to threads round-robin by
// position, and each tensor's statistics are only ever updated by one thread in batch order, so
// the result is the same for any thread count.
void ObserveInParallel(const std::vector<OutputView>& views, const std::map<std::string, std::string>& tensor_of,
                       calib::CalibrationTable* table, std::vector<std::vector<float>>* scratches) {
  const size_t threads = std::min(scratches->size(), views.size());
  const auto work = [&](size_t worker) {
    for (size_t k = worker; k < views.size(); k += threads) {
      auto name = tensor_of.find(views[k].name);
      auto it = table->tensors.find(name == tensor_of.end() ? views[k].name : name->second);
      if (it != table->tensors.end()) {
        Observe(&it->second, views[k].dtype, views[k].data, views[k].num_elements, &(*scratches)[worker]);
      }
    }
  };
  std::vector<std::thread> pool;
  for (size_t w = 1; w < threads; ++w) pool.emplace_back(work, w);
  if (threads > 0) work(0);
  for (auto& t : pool) t.join();
}

}  // namespace

CaptureResult CaptureStatistics(const onnx::ModelProto& model, const CalibrationSet& data, const CaptureRequest& request,
                                const RuntimeOptions& runtime) {
  CaptureResult result;
  std::set<std::string> graph_inputs;
  for (const auto& v : model.graph().input()) graph_inputs.insert(v.name());

  // Graph inputs are observed straight from the batches; everything else becomes a graph output.
  std::vector<std::string> from_inputs, from_outputs;
  for (const auto& t : request.tensors) (graph_inputs.count(t) ? from_inputs : from_outputs).push_back(t);
  // Tensors wanted only for their channel statistics come out of the same run.
  const std::set<std::string> requested(request.tensors.begin(), request.tensors.end());
  for (const auto& [t, axis] : request.channel_axis) {
    if (!requested.count(t)) (graph_inputs.count(t) ? from_inputs : from_outputs).push_back(t);
  }

  // Tensors inside control-flow subgraphs come out through extra outputs of their If/Loop/Scan
  // nodes (onnx/subgraphs.h). With nothing to observe inside the graph, the model still runs once
  // per batch on its own outputs (it validates the model and keeps the progress honest).
  std::map<std::string, std::string> exposed;    // subgraph tensor -> main-graph output carrying it
  std::map<std::string, std::string> tensor_of;  // that output -> the tensor
  const auto expose = [&](onnx::ModelProto* light) {
    if (onnxio::HasSubgraphs(light->graph())) {
      const auto types = onnxio::DeclaredElemTypes(onnxio::InferShapes(light).graph());
      exposed = onnxio::ExposeToMainGraph(light, from_outputs, types);
    }
    if (from_outputs.empty()) return;
    light->mutable_graph()->clear_output();
    for (const auto& t : from_outputs) {
      auto it = exposed.find(t);
      light->mutable_graph()->add_output()->set_name(it == exposed.end() ? t : it->second);
      if (it != exposed.end()) tensor_of[it->second] = t;
    }
  };
  InferenceSession session(onnxio::MakeSessionModel(model, {}, 64 * 1024, expose), runtime);
  result.providers = session.providers();

  std::vector<std::string> run_outputs;
  for (const auto& t : from_outputs) {
    auto it = exposed.find(t);
    const std::string& out = it == exposed.end() ? t : it->second;
    if (IsFloat(session.OutputType(out))) run_outputs.push_back(out);
    else if (requested.count(t)) result.not_float.push_back(t);
  }
  if (run_outputs.empty()) run_outputs.push_back(session.output_names().front());  // still validates the model runs
  std::set<std::string> observed;
  for (const auto& out : run_outputs) observed.insert(tensor_of.count(out) ? tensor_of.at(out) : out);
  for (const auto& t : from_inputs) observed.insert(t);
  for (const auto& t : request.tensors) {
    if (observed.count(t)) result.table.tensors.emplace(t, calib::TensorStatistics(t, request.histograms));
  }

  // Graph inputs reach us cast to the model's declared type, so the declaration says whether they
  // are float; a shard whose slice holds no batch then keeps the same tensors as any other.
  std::set<std::string> float_inputs;
  for (const auto& spec : ModelInputSpecs(model.graph()))
    if (IsFloat(spec.dtype)) float_inputs.insert(spec.name);
  for (const auto& t : from_inputs)
    if (!float_inputs.count(t) && requested.count(t)) result.not_float.push_back(t);

  std::set<std::string> bad_channels;  // shape did not fit: left out of result.channels
  const auto fold_channels = [&](const std::string& tensor, const OutputView& view) {
    auto axis = request.channel_axis.find(tensor);
    if (axis == request.channel_axis.end() || bad_channels.count(tensor) || view.dtype != DataType::kFloat) return;
    if (!FoldChannels(view, axis->second, &result.channels[tensor])) bad_channels.insert(tensor);
  };
  std::vector<float> scratch;  // for graph inputs, observed on this thread
  std::vector<std::vector<float>> scratches(CollectorThreads());
  const int64_t batches = request.num_batches > 0 ? request.num_batches : data.NumBatches(request.batch_size);
  const int64_t first = request.sliced ? request.first_batch : 0;
  const int64_t end = request.sliced ? std::min(request.end_batch, batches) : batches;
  progress::Stage stage("calibrating", "batches", end - first);
  for (int64_t b = first; b < end; ++b) {
    const Batch batch = data.ReadBatch(b, request.batch_size);
    for (const auto& t : from_inputs) {
      const HostTensor& in = batch.at(t);
      if (!float_inputs.count(t)) continue;
      auto stats = result.table.tensors.find(t);
      if (stats != result.table.tensors.end()) Observe(&stats->second, in.dtype, in.bytes.data(), in.NumElements(), &scratch);
      fold_channels(t, OutputView{t, in.dtype, in.shape, in.bytes.data(), in.NumElements()});
    }
    session.RunBatch(batch, run_outputs, [&](const std::vector<OutputView>& views) {
      ObserveInParallel(views, tensor_of, &result.table, &scratches);
      for (const auto& v : views) fold_channels(tensor_of.count(v.name) ? tensor_of.at(v.name) : v.name, v);
    });
    if (request.progress) request.progress(b + 1 - first, end - first);
    stage.Set(b + 1 - first);
  }
  for (const auto& t : result.not_float) result.table.tensors.erase(t);
  for (const auto& t : bad_channels) result.channels.erase(t);
  const int64_t used = std::min(data.num_samples(), batches * request.batch_size);
  result.num_samples = std::max<int64_t>(0, std::min(used, end * request.batch_size) - first * request.batch_size);
  return result;
}

}  // namespace ptqkit
