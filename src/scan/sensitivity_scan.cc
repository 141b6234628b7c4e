// The sensitivity scan (DESIGN.md "Sensitivity scan and picker"), as named steps:
//   OpenInputs -> MakeProbes (probes.h) -> CalibrateOnce -> PlanScan -> per chunk and probe group:
//   the FP32 reference, then every active probe (RunScanPlan, scan_plan.h; probe_sessions.h) -> Finish.
// One calibration serves every probe, and one FP32 reference pass (in chunks that fit the
// activation cache) serves every probe; a shard runs every step but probes only its own targets.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <set>

#include "base/log.h"
#include "calib/method.h"
#include "canon/canonicalize.h"
#include "calib/scale_search.h"
#include "data/run_digests.h"
#include "onnx/graph_index.h"
#include "onnx/model_prep.h"
#include "onnx/onnx_library.h"
#include "ptqkit/error.h"
#include "ptqkit/sensitivity.h"
#include "quant/formats/formats.h"
#include "runtime/activation_capture.h"
#include "runtime/prepared_model.h"
#include "runtime/session.h"
#include "scan/probe_eval.h"
#include "scan/probe_sessions.h"
#include "scan/probes.h"
#include "scan/sensitivity_shard.h"
#include "scan/scan_plan.h"
#include "sensitivity/metrics.h"
#include "accuracy/padding_mask_input.h"

namespace ptqkit {
namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void CheckOptions(const SensitivityOptions& o) {
  if (o.onnx_path.empty()) throw Error("--onnx_path is required");
  if (o.granularity != "op_type" && o.granularity != "node") {
    throw Error(fmt::format("unknown --granularity '{}' (expected op_type or node)", o.granularity));
  }
  TargetFormat(o);  // throws naming the accepted precisions
  calib::ParseMethod(o.calibration_method);  // every int8/fp8 method; throws naming the accepted ones
  calib::CheckPercentile(o.percentile);
  if (o.num_calib_samples < 1) throw Error("--num_calib_samples must be at least 1");
  if (o.activation_cache_limit_mb < 0) throw Error("--activation_cache_limit_mb must be 0 or more");
  if (o.calibration_batch_size < 0) throw Error("--calibration_batch_size must be positive");
  if (o.intra_op_num_threads < 0) {
    throw Error(fmt::format("--intra_op_num_threads must be 0 (ONNX Runtime's default) or more, got {}",
                            o.intra_op_num_threads));
  }
  for (const auto& ep : o.calibration_eps) CheckExecutionProviderName(ep);
  if (o.shard_count < 1 || o.shard_index < 0 || o.shard_index >= o.shard_count) {
    throw Error(fmt::format("shard {}/{}: expected K/N with N >= 1 and 0 <= K < N", o.shard_index, o.shard_count));
  }
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ",") + i;
  return out;
}

// Ranges from a calibration table written earlier. A table that says which model it was
// calibrated on must name this one; tensors it lacks are treated like tensors calibration could
// not observe (their probes lose them), since a table written by quantize holds only its plan's.
calib::CalibrationTable LoadTableFor(const SensitivityOptions& o, const std::string& model_digest,
                                     const std::set<std::string>& wanted) {
  calib::CalibrationTable table = calib::CalibrationTable::Load(o.calibration_cache);
  auto it = table.source.find("model");
  if (it != table.source.end() && it->second != model_digest) {
    throw Error(fmt::format("calibration table '{}' was calibrated on another model (digest {}; '{}' has {})",
                            o.calibration_cache, it->second, o.onnx_path, model_digest));
  }
  int64_t missing = 0;
  for (const auto& t : wanted) missing += table.tensors.count(t) ? 0 : 1;
  if (missing > 0) {
    log::Info("calibration table '{}' has no statistics for {} of the {} tensor(s) the probes read (not float, or "
              "not in its plan); those stay float",
              o.calibration_cache, missing, wanted.size());
  }
  return table;
}

// Everything a shard's scores depend on besides its slice (scan/fingerprint.h).
shard::Fingerprint ScanFingerprint(const SensitivityOptions& o, const std::string& model_digest,
                                   const CalibrationData& data, const EvalBatches& eval, int64_t num_targets) {
  return {{"ptqkit_version", PTQKIT_VERSION},
          {"model", model_digest},
          {"data", DataDigest(data.set)},
          {"data_source", data.synthetic ? fmt::format("synthetic (seed {})", o.synthetic_seed) : "real"},
          {"data_samples", std::to_string(eval.samples)},
          {"eval_batch_size", std::to_string(eval.batch_size)},
          {"granularity", o.granularity},
          {"metric", o.metric},
          {"target_precision", o.target_precision},
          {"calibration_method", o.calibration_method},
          {"calibration", o.calibration_cache.empty() ? "calibrated by the scan"
                                                      : "table " + FileDigest(o.calibration_cache)},
          {"op_types_scope", Join(o.op_types_scope)},
          {"activation_cache_limit_mb", std::to_string(o.activation_cache_limit_mb)},
          {"eval_mask_input", o.mask_input},
          {"stop_when_settled", o.stop_when_settled ? "true" : "false"},
          {"calibration_eps", Join(o.calibration_eps)},
          {"num_targets", std::to_string(num_targets)}};
}

// A scan of all targets (shard 0/1) or of one shard's.
struct ScanOutcome {
  SensitivityResult result;
  std::vector<std::string> targets;  // the targets this shard owns, in scan order
  int64_t num_targets = 0;
  shard::Fingerprint fingerprint;    // only for shards
};

// Step 1: the options, the files, the prepared model (at the format's opset) and the data. The
// model is read from --onnx_path, or is the caller's (an --accuracy_budget ranking scans the model
// its quantize run holds: no second copy of the weights).
struct ScanInputs {
  const QuantFormat* format = nullptr;
  PreparedModel loaded;                      // when read here
  const PreparedModel* prepared = nullptr;   // &loaded or the caller's
  std::optional<CalibrationData> data;
  RuntimeOptions runtime;
};

void OpenInputs(const SensitivityOptions& o, const PreparedModel* given, ScanInputs* in) {
  CheckOptions(o);
  sensitivity::ParseMetric(o.metric);  // a bad name fails before any file is read
  IoGuard files;
  files.Input(o.onnx_path, "--onnx_path");
  files.InputFolderFiles(o.calibration_data_path, "--calibration_data_path");
  for (const auto& [path, role] : o.output_files) files.Output(path, role);
  in->format = &TargetFormat(o);
  if (given) {
    files.Check();
    if (onnxio::DefaultOpset(given->proto) < in->format->min_opset) {
      throw Error(fmt::format("internal: the model handed to the scan is at opset {}, below {}'s {}",
                              onnxio::DefaultOpset(given->proto), in->format->name, in->format->min_opset));
    }
    in->prepared = given;
  } else {
    in->loaded = LoadPreparedModel(o.onnx_path, files);
    onnxio::UpgradeOpset(&in->loaded.proto, in->format->min_opset);  // e.g. FP8 Q/DQ need opset 21
    // The graph quantize plans on (its default --canonicalize): BatchNormalization folded into the
    // Conv, so the ranking names the nodes the quantized model has and probes their folded weights.
    if (HasCanonicalFolds(in->loaded.proto)) Canonicalize(&in->loaded.proto);
    in->prepared = &in->loaded;
  }
  DataRequest request{o.calibration_data_path, o.calibration_tensors, o.num_calib_samples, o.synthetic_seed,
                      o.calibration_shapes, o.calibration_batch_size, o.calibration_batch_axis};
  // Statistics do not depend on the batch size (exact merging), so a dynamic-batch model is
  // calibrated in evaluation-sized batches unless the user chose a batch size.
  if (HasDynamicBatch(*in->prepared) && request.batch_size == 0 && request.shapes.empty()) {
    request.batch_size = kEvalBatchForDynamicModels;
  }
  in->data = OpenCalibrationData(*in->prepared, request);
  in->runtime = {o.calibration_eps, o.trt_plugins, o.intra_op_num_threads};
}

// Step 2: one calibration pass over the union of every probe's activation tensors, or a table
// calibrated earlier on exactly that union (`calibrate --for_sensitivity`). A shard observes the
// whole union too, not only its own probes' tensors: ONNX Runtime fuses differently when other
// tensors are graph outputs, and the activations would then differ from a whole scan's in the last
// bit. Tensors without statistics leave the probes; returns the ranges of the tensors this shard's
// probes quantize (the mse/entropy searches cost milliseconds per tensor, a fixed cost per shard
// that would not shrink with N otherwise).
std::map<std::string, float> CalibrateOnce(const SensitivityOptions& o, const ScanInputs& in, const GraphIndex& index,
                                           const std::string& model_digest, const shard::ShardSpec& spec,
                                           std::vector<Probe>* probes, int64_t* num_samples) {
  const calib::Method method = calib::ParseMethod(o.calibration_method);
  std::set<std::string> wanted;
  for (const auto& p : *probes)
    for (const auto& t : p.plan.ActivationTensors()) wanted.insert(t);
  calib::CalibrationTable table;
  *num_samples = std::min(in.data->set.num_samples(), in.data->num_batches * in.data->batch_size);
  if (o.calibration_cache.empty()) {
    CaptureRequest capture;
    capture.tensors.assign(wanted.begin(), wanted.end());
    capture.histograms = method != calib::Method::kMax;
    capture.batch_size = in.data->batch_size;
    capture.num_batches = in.data->num_batches;
    CaptureResult captured = CaptureStatistics(in.prepared->proto, in.data->set, capture, in.runtime);
    table = std::move(captured.table);
    *num_samples = captured.num_samples;
  } else {
    table = LoadTableFor(o, model_digest, wanted);
  }
  for (const auto& t : wanted) {
    if (table.tensors.count(t)) continue;
    for (auto& p : *probes) p.plan.DropTensor(t, index, "input is not a float tensor");
  }
  std::set<std::string> ranged;
  for (size_t i = 0; i < probes->size(); ++i) {
    if (!shard::OwnsStrided(static_cast<int64_t>(i), spec)) continue;
    for (const auto& t : (*probes)[i].plan.ActivationTensors()) ranged.insert(t);
  }
  std::map<std::string, float> amax;
  for (const auto& t : ranged) {
    auto it = table.tensors.find(t);
    if (it != table.tensors.end()) amax[t] = calib::ComputeAmax(it->second, method, o.percentile, in.format->grid);
  }
  return amax;
}

// Steps 3 and 4, the plan of the FP32 passes and the probes run on them: scan/scan_plan.h.

// Step 5: failures in scan order (they were found in session-batch order, which depends on how
// probes were batched and, for merged shards, on the split); a whole scan that scored nothing is
// an error.
void Finish(const SensitivityOptions& o, const std::vector<Probe>& probes, bool sharded, SensitivityResult* result) {
  std::map<std::string, size_t> position;
  for (size_t i = 0; i < probes.size(); ++i) position[probes[i].target] = i;
  const auto by_position = [&](const auto& a, const auto& b) { return position.at(a.first) < position.at(b.first); };
  std::stable_sort(result->failed.begin(), result->failed.end(), by_position);
  std::stable_sort(result->non_finite.begin(), result->non_finite.end(), by_position);
  if (!result->scores.empty() || sharded) return;
  if (probes.empty()) {
    throw Error(fmt::format("sensitivity scan of '{}' has nothing to score: no node of the model is in "
                            "the scope (--op_types_scope)", o.onnx_path));
  }
  throw Error(fmt::format("sensitivity scan of '{}' scored nothing: all {} probes failed; the first, '{}': {}",
                          o.onnx_path, result->failed.size(), result->failed.front().first,
                          result->failed.front().second));
}

// as_part: score one shard's targets and fingerprint the run (ScoreSensitivityShard).
ScanOutcome Scan(const SensitivityOptions& o, bool as_part, const PreparedModel* given = nullptr) {
  const auto start = Clock::now();
  ScanInputs in;
  OpenInputs(o, given, &in);
  const sensitivity::Metric metric = sensitivity::ParseMetric(o.metric);
  const onnx::ModelProto& model = in.prepared->proto;
  const GraphIndex index(model.graph());
  std::vector<Probe> probes = MakeProbes(index, o);
  const shard::ShardSpec spec{o.shard_index, o.shard_count};
  const bool sharded = as_part;
  const std::string model_digest = sharded || !o.calibration_cache.empty() ? ModelDigest(o.onnx_path, model) : "";

  const auto calib_start = Clock::now();
  int64_t num_samples = 0;
  const std::map<std::string, float> amax = CalibrateOnce(o, in, index, model_digest, spec, &probes, &num_samples);
  const double calibration_s = Since(calib_start);

  const auto plan_start = Clock::now();
  const EvalBatches eval = ChooseEvalBatches(*in.prepared, *in.data, num_samples);
  const ReferenceSource source{&model, &in.data->set, in.runtime,
                               accuracy::PaddingMaskInput(model.graph(), o.mask_input)};
  const ScanPlan plan = PlanScan(o, source, index, eval, &probes);
  const double plan_s = Since(plan_start);

  SensitivityResult result;
  result.onnx_path = o.onnx_path;
  result.calibration_source = in.data->synthetic ? "synthetic" : "real";
  result.num_calibration_samples = num_samples;
  result.metric = sensitivity::MetricName(metric);
  result.granularity = o.granularity;
  result.target_precision = o.target_precision;
  result.ptqkit_version = PTQKIT_VERSION;

  // Step 4: this shard's probes.
  const auto probes_start = Clock::now();
  ScanOutcome outcome;
  outcome.num_targets = static_cast<int64_t>(probes.size());
  std::vector<size_t> owned;
  for (size_t i = 0; i < probes.size(); ++i) {
    if (!shard::OwnsStrided(static_cast<int64_t>(i), spec)) continue;
    outcome.targets.push_back(probes[i].target);
    owned.push_back(i);
  }
  int64_t done = 0;
  ProbeContext context{&probes, &model, nullptr, &eval, metric, &amax, in.format, in.runtime, [&] {
                         if (o.progress) o.progress(++done, static_cast<int64_t>(outcome.targets.size()));
                       }};
  // Probes measure quantization, not ONNX Runtime's kernels: where its default level computes a
  // format wrongly (FP8 fusions everywhere, INT8 without VNNI), they run at the basic level.
  const bool saturating_int8 = in.format->storage_type == onnx::TensorProto::INT8 && OrtInt8KernelsSaturate();
  context.runtime.basic_optimizations_only = in.format->ort_cpu_fusions_unsafe || saturating_int8;
  if (saturating_int8) {
    log::Debug("this CPU has no VNNI: ONNX Runtime's INT8 kernels saturate here, so INT8 probes run at its basic "
              "level (fake-quant)");
  }
  ProbeSessions sessions(context, &result);
  const double chunk_reference_s = RunScanPlan(o, source, eval, plan, owned, probes, &sessions, &result);

  Finish(o, probes, sharded, &result);
  result.timings["calibration_s"] = calibration_s;
  // The FP32 reference passes (per chunk and probe group, plus the one batch that planned them).
  result.timings["reference_s"] = plan_s + chunk_reference_s;
  result.timings["probes_s"] = Since(probes_start) - chunk_reference_s;
  result.timings["probes_onnxruntime_s"] = sessions.onnxruntime_seconds();
  if (sharded) outcome.fingerprint = ScanFingerprint(o, model_digest, *in.data, eval, outcome.num_targets);
  result.timings["total_s"] = Since(start);
  outcome.result = std::move(result);
  return outcome;
}

}  // namespace

sensitivity::SensitivityResult ScoreSensitivity(const SensitivityOptions& o) {
  if (o.shard_count != 1) throw Error("ScoreSensitivity scores every target; use ScoreSensitivityShard for a shard");
  return Scan(o, false).result;
}

sensitivity::SensitivityResult ScoreSensitivityOf(const SensitivityOptions& o, const PreparedModel& model) {
  if (o.shard_count != 1) throw Error("ScoreSensitivityOf scores every target");
  return Scan(o, false, &model).result;
}

shard::SensitivityPart ScoreSensitivityShard(const SensitivityOptions& o) {
  // A 1/1 "shard" is a part too (fingerprinted, mergeable), so N = 1 needs no special case.
  ScanOutcome outcome = Scan(o, true);
  shard::SensitivityPart part;
  part.shard = {o.shard_index, o.shard_count};
  part.num_targets = outcome.num_targets;
  part.targets = std::move(outcome.targets);
  part.fingerprint = std::move(outcome.fingerprint);
  part.result = std::move(outcome.result);
  return part;
}

}  // namespace ptqkit
