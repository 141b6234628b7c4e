#include <fmt/format.h>

#include <chrono>
#include <set>

#include "base/log.h"
#include "calib/method.h"
#include "calib/scale_search.h"
#include "onnx/graph_index.h"
#include "onnx/model_prep.h"
#include "pipeline/activation_capture.h"
#include "pipeline/prepared_model.h"
#include "ptqkit/error.h"
#include "ptqkit/sensitivity.h"
#include "quant/placement.h"
#include "quant/qdq_rewrite.h"
#include "runtime/session.h"
#include "sensitivity/metrics.h"

namespace ptqkit {
namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Probe {
  std::string target;
  Placement plan;
};

// Outputs of the FP32 model for every calibration batch, kept for comparison with each probe.
using BatchOutputs = std::vector<std::vector<HostTensor>>;

std::vector<std::string> ScopeOpTypes(const GraphIndex& g, const std::vector<std::string>& scope) {
  std::set<std::string> present;
  for (int i = 0; i < g.num_nodes(); ++i) present.insert(g.node(i).op_type());
  std::vector<std::string> types;
  if (scope.empty()) {
    for (const auto& t : present)
      if (InDefaultSensitivityScope(t)) types.push_back(t);
    return types;
  }
  for (const auto& t : scope) {
    if (!present.count(t)) log::Warn("--op_types_scope '{}': the model has no op of that type", t);
    else types.push_back(t);
  }
  return types;
}

std::vector<Probe> MakeProbes(const GraphIndex& g, const SensitivityOptions& o) {
  const std::vector<std::string> types = ScopeOpTypes(g, o.op_types_scope);
  std::vector<Probe> probes;
  if (o.granularity == "op_type") {
    for (const auto& t : types) {
      PlacementOptions p;
      p.fp8 = o.target_precision == "fp8";
      p.op_types_to_quantize = {t};
      probes.push_back({t, PlanPlacement(g, p)});
    }
  } else {
    const std::set<std::string> in_scope(types.begin(), types.end());
    for (int i = 0; i < g.num_nodes(); ++i) {
      if (!in_scope.count(g.node(i).op_type())) continue;
      PlacementOptions p;
      p.fp8 = o.target_precision == "fp8";
      p.nodes_to_quantize = {g.node(i).name()};  // an exact name selects that node only
      probes.push_back({g.node(i).name(), PlanPlacement(g, p)});
    }
  }
  return probes;
}

BatchOutputs RunAll(InferenceSession& session, const CalibrationData& data) {
  BatchOutputs outputs;
  for (int64_t b = 0; b < data.num_batches; ++b) {
    outputs.push_back(session.Run(data.set.ReadBatch(b, data.batch_size), session.output_names()));
  }
  return outputs;
}

// Sum over graph outputs of the mean over samples of the metric. A batch output whose axis 0
// equals the batch's sample count is split per sample; otherwise it counts as one sample.
double Compare(sensitivity::Metric metric, const BatchOutputs& ref, const BatchOutputs& probe, int64_t batch_size,
               int64_t num_samples) {
  std::vector<double> sum(ref.empty() ? 0 : ref[0].size(), 0.0);
  std::vector<int64_t> count(sum.size(), 0);
  for (size_t b = 0; b < ref.size(); ++b) {
    const int64_t rows = std::min<int64_t>(batch_size, num_samples - static_cast<int64_t>(b) * batch_size);
    for (size_t k = 0; k < ref[b].size(); ++k) {
      const HostTensor& r = ref[b][k];
      const HostTensor& p = probe[b][k];
      if (r.dtype != DataType::kFloat || p.dtype != DataType::kFloat) continue;  // only float outputs are compared
      const int64_t n = r.NumElements();
      const int64_t samples = (!r.shape.empty() && r.shape[0] == rows && rows > 0) ? rows : 1;
      const int64_t per = n / samples;
      for (int64_t s = 0; s < samples; ++s) {
        sum[k] += sensitivity::CompareSample(metric, r.Data<float>() + s * per, p.Data<float>() + s * per,
                                             static_cast<size_t>(per));
        ++count[k];
      }
    }
  }
  double total = 0.0;
  for (size_t k = 0; k < sum.size(); ++k)
    if (count[k]) total += sum[k] / static_cast<double>(count[k]);
  return total;
}

void CheckOptions(const SensitivityOptions& o) {
  if (o.onnx_path.empty()) throw Error("--onnx_path is required");
  if (o.granularity != "op_type" && o.granularity != "node") {
    throw Error(fmt::format("unknown --granularity '{}' (expected op_type or node)", o.granularity));
  }
  if (o.target_precision != "int8" && o.target_precision != "fp8") {
    throw Error(fmt::format("unknown --target_precision '{}' (expected int8 or fp8)", o.target_precision));
  }
  if (o.calibration_method != "entropy" && o.calibration_method != "max") {
    throw Error(fmt::format("unknown --calibration_method '{}' for a sensitivity scan (expected entropy or max)",
                            o.calibration_method));
  }
  if (o.num_calib_samples < 1) throw Error("--num_calib_samples must be at least 1");
  for (const auto& ep : o.calibration_eps) CheckExecutionProviderName(ep);
}

}  // namespace

bool InDefaultSensitivityScope(const std::string& op) {
  static const std::set<std::string> kScope = {
      // quantizable compute and the ops ONNX Runtime's QDQ quantizer handles
      "Conv", "ConvTranspose", "Gemm", "MatMul", "Add", "Mul", "Sub", "Div", "MaxPool", "AveragePool",
      "GlobalAveragePool", "GlobalMaxPool", "Resize", "Pad", "Where", "ArgMax", "Einsum",
      // activations
      "Relu", "LeakyRelu", "PRelu", "Clip", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Elu", "Selu", "Gelu", "Erf",
      "Softmax", "LogSoftmax", "Softplus", "Mish", "Pow", "Sqrt", "Exp",
      // normalization
      "BatchNormalization", "LayerNormalization", "InstanceNormalization", "GroupNormalization",
      // fusible reductions
      "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceL2"};
  return kScope.count(op) > 0;
}

sensitivity::SensitivityResult ScoreSensitivity(const SensitivityOptions& o) {
  const auto start = Clock::now();
  CheckOptions(o);
  const sensitivity::Metric metric = sensitivity::ParseMetric(o.metric);
  const calib::Method method = calib::ParseMethod(o.calibration_method);

  PreparedModel prepared = LoadPreparedModel(o.onnx_path);
  const bool fp8 = o.target_precision == "fp8";
  if (fp8) onnxio::UpgradeOpset(&prepared.proto, 19);  // FP8 Q/DQ need opset 19
  const onnx::ModelProto& model = prepared.proto;
  DataRequest request{o.calibration_data_path, o.calibration_tensors, o.num_calib_samples, o.synthetic_seed,
                      o.calibration_shapes, o.calibration_batch_size};
  const CalibrationData data = OpenCalibrationData(prepared, request);
  const RuntimeOptions runtime{o.calibration_eps, o.trt_plugins, o.intra_op_num_threads};

  GraphIndex index(model.graph());
  std::vector<Probe> probes = MakeProbes(index, o);

  // One calibration pass over the union of every probe's activation tensors.
  const auto calib_start = Clock::now();
  std::set<std::string> wanted;
  for (const auto& p : probes)
    for (const auto& t : p.plan.ActivationTensors()) wanted.insert(t);
  CaptureRequest capture;
  capture.tensors.assign(wanted.begin(), wanted.end());
  capture.histograms = method != calib::Method::kMax;
  capture.batch_size = data.batch_size;
  capture.num_batches = data.num_batches;
  CaptureResult captured = CaptureStatistics(model, data.set, capture, runtime);
  for (auto& p : probes)
    for (const auto& t : captured.not_float) p.plan.DropTensor(t, index, "input is not a float tensor");
  std::map<std::string, float> amax;
  for (const auto& [name, stats] : captured.table.tensors) amax[name] = calib::ComputeAmax(stats, method);
  const double calibration_s = Since(calib_start);

  const auto ref_start = Clock::now();
  std::string fp32_bytes;
  model.SerializeToString(&fp32_bytes);
  InferenceSession fp32(fp32_bytes, runtime);
  const BatchOutputs reference = RunAll(fp32, data);
  const double reference_s = Since(ref_start);

  sensitivity::SensitivityResult result;
  result.onnx_path = o.onnx_path;
  result.calibration_source = data.synthetic ? "synthetic" : "real";
  result.num_calibration_samples = captured.num_samples;
  result.metric = sensitivity::MetricName(metric);
  result.granularity = o.granularity;
  result.target_precision = o.target_precision;
  result.ptqkit_version = "0.1.0";

  const auto probes_start = Clock::now();
  for (size_t i = 0; i < probes.size(); ++i) {
    const Probe& p = probes[i];
    if (p.plan.tensors.empty()) {
      result.failed.emplace_back(p.target, "probe inserts no Q/DQ (no quantizable float input)");
    } else {
      try {
        const std::map<std::string, float> probe_amax = PlanRanges(p.plan, amax);
        onnx::ModelProto probe_model = model;
        RewriteOptions rewrite;
        rewrite.format = fp8 ? QuantFormat::kFloat8E4M3FN : QuantFormat::kInt8;
        InsertQdq(&probe_model, p.plan, probe_amax, rewrite);
        std::string bytes;
        probe_model.SerializeToString(&bytes);
        RuntimeOptions probe_runtime = runtime;
        probe_runtime.basic_optimizations_only = fp8;
        InferenceSession session(bytes, probe_runtime);
        const BatchOutputs outputs = RunAll(session, data);
        result.scores[p.target] = Compare(metric, reference, outputs, data.batch_size, captured.num_samples);
      } catch (const std::exception& e) {
        result.failed.emplace_back(p.target, e.what());
      }
    }
    if (o.progress) o.progress(static_cast<int64_t>(i + 1), static_cast<int64_t>(probes.size()));
  }
  result.timings["calibration_s"] = calibration_s;
  result.timings["reference_s"] = reference_s;
  result.timings["probes_s"] = Since(probes_start);
  result.timings["total_s"] = Since(start);
  return result;
}

}  // namespace ptqkit
