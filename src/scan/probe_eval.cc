#include "scan/probe_eval.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "base/log.h"
#include "onnx/model_io.h"

namespace ptqkit {
namespace {

// An output declared [d0 static != 1, ..., one dynamic dim at k > 0, ...]: its batch is axis k.
bool BatchNotOnAxis0(const onnx::ValueInfoProto& v) {
  const auto& dims = v.type().tensor_type().shape().dim();
  if (dims.empty() || !dims[0].has_dim_value() || dims[0].dim_value() == 1) return false;
  int dynamic = 0;
  for (const auto& d : dims) dynamic += d.has_dim_value() ? 0 : 1;
  return dynamic == 1;
}

}  // namespace

bool HasDynamicBatch(const PreparedModel& model) {
  bool dynamic = true;
  for (const auto& in : model.inputs) dynamic &= !in.shape.empty() && in.shape[0] < 0;
  return dynamic;
}

EvalBatches ChooseEvalBatches(const PreparedModel& model, const CalibrationData& data, int64_t samples) {
  EvalBatches e;
  e.samples = samples;
  e.batch_size = HasDynamicBatch(model) ? std::min(kEvalBatchForDynamicModels, samples) : data.batch_size;
  e.count = (samples + e.batch_size - 1) / e.batch_size;
  return e;
}

Reference RunReference(const onnx::ModelProto& model, const CalibrationSet& set, const EvalBatches& eval,
                       const std::set<std::string>& boundaries, bool keep_boundaries, const RuntimeOptions& runtime,
                       int64_t first_batch, int64_t end_batch, const std::string& mask_input) {
  Reference ref;
  ref.first_batch = first_batch;
  for (const auto& o : model.graph().output()) {
    ref.output_names.push_back(o.name());
    if (BatchNotOnAxis0(o)) ref.unsplit_outputs.insert(o.name());
  }
  std::set<std::string> graph_inputs;
  for (const auto& v : model.graph().input()) graph_inputs.insert(v.name());
  std::vector<std::string> wanted = ref.output_names;
  ref.has_boundaries = keep_boundaries;
  for (const auto& t : ref.has_boundaries ? boundaries : std::set<std::string>{}) {
    if (graph_inputs.count(t) || std::find(wanted.begin(), wanted.end(), t) != wanted.end()) continue;
    wanted.push_back(t);
  }
  InferenceSession session(onnxio::MakeSessionModel(model, wanted), runtime);
  for (int64_t b = first_batch; b < std::min(end_batch, eval.count); ++b) {
    Batch batch = set.ReadBatch(b, eval.batch_size);
    std::map<std::string, HostTensor> values;
    auto outputs = session.Run(batch, wanted);
    for (size_t k = 0; k < wanted.size(); ++k) values[wanted[k]] = std::move(outputs[k]);
    for (auto& [name, t] : batch) values[name] = std::move(t);
    if (!mask_input.empty()) ref.padding.push_back(sensitivity::PaddingMask::Of(values, mask_input));
    for (const auto& [name, t] : values) ref.types[name] = {t.dtype, t.shape.size()};
    if (!ref.has_boundaries) {
      // Whole-model probes read the graph inputs (the calibration batch) and are compared on the
      // outputs: keep exactly those. Dropping the inputs here made every probe fail with
      // "no data for model input".
      std::map<std::string, HostTensor> kept;
      for (const auto& name : ref.output_names) kept[name] = std::move(values[name]);
      for (const auto& name : graph_inputs)
        if (values.count(name)) kept[name] = std::move(values[name]);
      values = std::move(kept);
    }
    ref.batches.push_back(std::move(values));
  }
  return ref;
}

std::string NonFiniteOutputs(const ProbeOutputs& probe) {
  std::map<std::string, std::pair<int64_t, int64_t>> bad;  // output -> (NaN, Inf) counts
  std::map<std::string, int64_t> total;
  for (const auto& batch : probe) {
    for (const auto& [name, t] : batch) {
      if (t.dtype != DataType::kFloat) continue;
      const float* v = t.Data<float>();
      const int64_t n = t.NumElements();
      total[name] += n;
      for (int64_t i = 0; i < n; ++i) {
        if (std::isnan(v[i])) ++bad[name].first;
        else if (std::isinf(v[i])) ++bad[name].second;
      }
    }
  }
  std::string out;
  for (const auto& [name, counts] : bad) {
    if (counts.first == 0 && counts.second == 0) continue;
    out += fmt::format("{}output '{}' {}{}{} of {} values", out.empty() ? "" : "; ", name,
                       counts.first ? fmt::format("NaN: {}", counts.first) : "",
                       counts.first && counts.second ? ", " : "",
                       counts.second ? fmt::format("Inf: {}", counts.second) : "", total[name]);
  }
  return out.empty() ? out : "non-finite outputs: " + out;
}

void AddToScore(const Reference& ref, const ProbeOutputs& probe, const EvalBatches& eval,
                sensitivity::ScoreAccumulator* score) {
  for (size_t k = 0; k < ref.output_names.size(); ++k) {
    const std::string& name = ref.output_names[k];
    if (probe.empty() || !probe[0].count(name)) continue;
    for (size_t b = 0; b < ref.batches.size(); ++b) {
      const HostTensor* r = &ref.batches[b].at(name);
      const HostTensor* p = &probe[b].at(name);
      if (r->dtype != DataType::kFloat || p->dtype != DataType::kFloat) break;  // only float outputs are compared
      // Padded positions zeroed in copies: the cached values may feed other probes' sub-graphs.
      HostTensor masked_r, masked_p;
      if (!ref.padding.empty()) {
        masked_r = *r;
        masked_p = *p;
        ref.padding[b].Apply(&masked_r);
        ref.padding[b].Apply(&masked_p);
        r = &masked_r;
        p = &masked_p;
      }
      const int64_t batch = ref.first_batch + static_cast<int64_t>(b);
      const int64_t rows = std::min(eval.batch_size, eval.samples - batch * eval.batch_size);
      const int64_t samples =
          (!r->shape.empty() && r->shape[0] == rows && !ref.unsplit_outputs.count(name)) ? rows : 1;
      const int64_t per = r->NumElements() / samples;
      // Samples are numbered in order of arrival: chunks come in batch order, so the running sums
      // add in the same order as a scan over all batches at once (bit-identical scores).
      const int64_t next = score->NumSamples(k);
      for (int64_t s = 0; s < samples; ++s) {
        score->Add(k, next + s, r->Data<float>() + s * per, p->Data<float>() + s * per, static_cast<size_t>(per));
      }
    }
  }
}


ProbeOutputs RunOnReference(const onnx::ModelProto& model, const onnx::GraphProto* weights,
                            const std::vector<std::string>& outputs,
                            const std::vector<std::string>& names, const Reference& ref, const RuntimeOptions& runtime,
                            bool all_as_inputs) {
  // The large initializers are handed over as views, not serialized: a serialized merged probe
  // held its downstream weights twice more (the bytes, then ONNX Runtime's parse).
  InferenceSession session(weights ? onnxio::MakeSessionModelOver(model, *weights, all_as_inputs)
                                   : onnxio::MakeSessionModel(model),
                           runtime);
  ProbeOutputs results;
  for (const auto& batch : ref.batches) {
    // The cached batch holds every tensor a probe may read; the session looks up its own inputs
    // by name, so it is fed in place, without copying activations.
    auto values = session.Run(batch, outputs);
    std::map<std::string, HostTensor> named;
    for (size_t k = 0; k < outputs.size(); ++k) named[names[k]] = std::move(values[k]);
    results.push_back(std::move(named));
  }
  return results;
}

}  // namespace ptqkit
