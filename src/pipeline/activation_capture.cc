#include "pipeline/activation_capture.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <thread>

#include "base/log.h"
#include "onnx/model_io.h"
#include "onnx/float16.h"
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
void ObserveInParallel(const std::vector<OutputView>& views, calib::CalibrationTable* table,
                       std::vector<std::vector<float>>* scratches) {
  const size_t threads = std::min(scratches->size(), views.size());
  const auto work = [&](size_t worker) {
    for (size_t k = worker; k < views.size(); k += threads) {
      auto it = table->tensors.find(views[k].name);
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

  // With nothing to observe inside the graph, the model still runs once per batch on its own
  // outputs (it validates the model and keeps the progress honest).
  InferenceSession session(onnxio::MakeSessionModel(model, from_outputs), runtime);
  result.providers = session.providers();

  std::vector<std::string> run_outputs;
  for (const auto& t : from_outputs) {
    if (IsFloat(session.OutputType(t))) run_outputs.push_back(t);
    else result.not_float.push_back(t);
  }
  if (run_outputs.empty()) run_outputs.push_back(session.output_names().front());  // still validates the model runs
  std::set<std::string> observed(run_outputs.begin(), run_outputs.end());
  for (const auto& t : from_inputs) observed.insert(t);
  for (const auto& t : request.tensors) {
    if (observed.count(t)) result.table.tensors.emplace(t, calib::TensorStatistics(t, request.histograms));
  }

  std::vector<float> scratch;  // for graph inputs, observed on this thread
  std::vector<std::vector<float>> scratches(CollectorThreads());
  const int64_t batches = request.num_batches > 0 ? request.num_batches : data.NumBatches(request.batch_size);
  for (int64_t b = 0; b < batches; ++b) {
    const Batch batch = data.ReadBatch(b, request.batch_size);
    for (const auto& t : from_inputs) {
      const HostTensor& in = batch.at(t);
      if (!IsFloat(in.dtype)) {
        if (b == 0) result.not_float.push_back(t);
        continue;
      }
      Observe(&result.table.tensors.at(t), in.dtype, in.bytes.data(), in.NumElements(), &scratch);
    }
    session.RunBatch(batch, run_outputs, [&](const std::vector<OutputView>& views) {
      ObserveInParallel(views, &result.table, &scratches);
    });
    if (request.progress) request.progress(b + 1, batches);
  }
  for (const auto& t : result.not_float) result.table.tensors.erase(t);
  result.num_samples = std::min(data.num_samples(), batches * request.batch_size);
  return result;
}

}  // namespace ptqkit
