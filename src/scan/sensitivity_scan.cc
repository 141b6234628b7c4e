#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <set>

#include "base/log.h"
#include "calib/method.h"
#include "calib/scale_search.h"
#include "onnx/graph_index.h"
#include "onnx/model_prep.h"
#include "onnx/onnx_library.h"
#include "runtime/activation_capture.h"
#include "runtime/prepared_model.h"
#include "scan/probe_cut.h"
#include "scan/probe_eval.h"
#include "scan/probe_merge.h"
#include "data/run_digests.h"
#include "scan/sensitivity_shard.h"
#include "ptqkit/error.h"
#include "ptqkit/sensitivity.h"
#include "quant/formats.h"
#include "quant/placement.h"
#include "quant/qdq_rewrite.h"
#include "runtime/session.h"
#include "sensitivity/metrics.h"
#include "sensitivity/scores_file.h"

namespace ptqkit {
namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Probe {
  std::string target;
  Placement plan;
  ProbeCut cut;  // filled once the plan is final (after non-float tensors are dropped)
};

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

const QuantFormat& TargetFormat(const SensitivityOptions& o) {
  return FindFormat(o.target_precision, "--target_precision", /*activations_only=*/true);
}

std::vector<Probe> MakeProbes(const GraphIndex& g, const SensitivityOptions& o) {
  const std::vector<std::string> types = ScopeOpTypes(g, o.op_types_scope);
  const QuantFormat& format = TargetFormat(o);
  std::vector<Probe> probes;
  if (o.granularity == "op_type") {
    for (const auto& t : types) {
      PlacementOptions p;
      p.format = &format;
      p.op_types_to_quantize = {t};
      probes.push_back({t, PlanPlacement(g, p), {}});
    }
  } else {
    const std::set<std::string> in_scope(types.begin(), types.end());
    for (int i = 0; i < g.num_nodes(); ++i) {
      if (!in_scope.count(g.node(i).op_type())) continue;
      PlacementOptions p;
      p.format = &format;
      p.nodes_to_quantize = {g.node(i).name()};  // an exact name selects that node only
      probes.push_back({g.node(i).name(), PlanPlacement(g, p), {}});
    }
  }
  return probes;
}

// Probes waiting to be evaluated together in one merged session.
struct PendingProbe {
  size_t probe;
  onnx::ModelProto submodel;
  std::vector<std::string> outputs;  // graph outputs of the original model it recomputes
};

// Probes per merged session. Measured on ResNet-18 (68 node probes): 16 per session was 20 % slower
// than 4 (one large graph runs with worse locality); 1–4 are within noise; on small models the
// saved session start-ups matter a little more.
constexpr size_t kProbesPerSession = 4;

void CheckOptions(const SensitivityOptions& o) {
  if (o.onnx_path.empty()) throw Error("--onnx_path is required");
  if (o.granularity != "op_type" && o.granularity != "node") {
    throw Error(fmt::format("unknown --granularity '{}' (expected op_type or node)", o.granularity));
  }
  TargetFormat(o);  // throws naming the accepted precisions
  calib::ParseMethod(o.calibration_method);  // every int8/fp8 method; throws naming the accepted ones
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

namespace {

// as_part: score one shard's targets and fingerprint the run (ScoreSensitivityShard).
ScanOutcome Scan(const SensitivityOptions& o, bool as_part) {
  const auto start = Clock::now();
  CheckOptions(o);
  const sensitivity::Metric metric = sensitivity::ParseMetric(o.metric);
  const calib::Method method = calib::ParseMethod(o.calibration_method);

  IoGuard files;
  files.Input(o.onnx_path, "--onnx_path");
  files.InputFolderFiles(o.calibration_data_path, "--calibration_data_path");
  for (const auto& [path, role] : o.output_files) files.Output(path, role);
  files.Check();
  PreparedModel prepared = LoadPreparedModel(o.onnx_path, files);
  const QuantFormat& format = TargetFormat(o);
  onnxio::UpgradeOpset(&prepared.proto, format.min_opset);  // e.g. FP8 Q/DQ need opset 19
  const onnx::ModelProto& model = prepared.proto;
  DataRequest request{o.calibration_data_path, o.calibration_tensors, o.num_calib_samples, o.synthetic_seed,
                      o.calibration_shapes, o.calibration_batch_size, o.calibration_batch_axis};
  // Statistics do not depend on the batch size (exact merging), so a dynamic-batch model is
  // calibrated in evaluation-sized batches unless the user chose a batch size.
  if (HasDynamicBatch(prepared) && request.batch_size == 0 && request.shapes.empty()) request.batch_size = kEvalBatchForDynamicModels;
  const CalibrationData data = OpenCalibrationData(prepared, request);
  const RuntimeOptions runtime{o.calibration_eps, o.trt_plugins, o.intra_op_num_threads};

  GraphIndex index(model.graph());
  std::vector<Probe> probes = MakeProbes(index, o);
  const shard::ShardSpec spec{o.shard_index, o.shard_count};
  const bool sharded = as_part;
  const std::string model_digest =
      sharded || !o.calibration_cache.empty() ? ModelDigest(o.onnx_path, prepared.proto) : "";

  // One calibration pass over the union of every probe's activation tensors, or a table calibrated
  // earlier on exactly that union (`calibrate --for_sensitivity`). A shard observes the whole union
  // too, not only its own probes' tensors: ONNX Runtime fuses differently when other tensors are
  // graph outputs, and the activations would then differ from a whole scan's in the last bit.
  const auto calib_start = Clock::now();
  std::set<std::string> wanted;
  for (const auto& p : probes)
    for (const auto& t : p.plan.ActivationTensors()) wanted.insert(t);
  calib::CalibrationTable table;
  int64_t num_samples = std::min(data.set.num_samples(), data.num_batches * data.batch_size);
  if (o.calibration_cache.empty()) {
    CaptureRequest capture;
    capture.tensors.assign(wanted.begin(), wanted.end());
    capture.histograms = method != calib::Method::kMax;
    capture.batch_size = data.batch_size;
    capture.num_batches = data.num_batches;
    CaptureResult captured = CaptureStatistics(model, data.set, capture, runtime);
    table = std::move(captured.table);
    num_samples = captured.num_samples;
  } else {
    table = LoadTableFor(o, model_digest, wanted);
  }
  for (const auto& t : wanted) {
    if (table.tensors.count(t)) continue;
    for (auto& p : probes) p.plan.DropTensor(t, index, "input is not a float tensor");
  }
  // Ranges only for the tensors this shard's probes quantize: the mse/entropy searches cost
  // milliseconds per tensor, a fixed cost per shard that would not shrink with N otherwise.
  std::set<std::string> ranged;
  for (size_t i = 0; i < probes.size(); ++i) {
    if (!shard::OwnsStrided(static_cast<int64_t>(i), spec)) continue;
    for (const auto& t : probes[i].plan.ActivationTensors()) ranged.insert(t);
  }
  std::map<std::string, float> amax;
  for (const auto& t : ranged) {
    auto it = table.tensors.find(t);
    if (it != table.tensors.end()) {
      amax[t] = calib::ComputeAmax(it->second, method, 99.999, format.grid);
    }
  }
  const double calibration_s = Since(calib_start);

  const auto ref_start = Clock::now();
  const EvalBatches eval = ChooseEvalBatches(prepared, data, num_samples);
  // Every shard caches the boundaries of all probes, not only its own, so that it makes the same
  // choice between sub-graph and whole-model probes (--activation_cache_limit_mb) as a whole scan.
  std::set<std::string> boundaries;
  for (auto& p : probes) {
    if (p.plan.tensors.empty()) continue;
    p.cut = ComputeProbeCut(index, p.plan);
    boundaries.insert(p.cut.boundary.begin(), p.cut.boundary.end());
  }
  const Reference ref_data = RunReference(model, data.set, eval, boundaries, runtime,
                                          static_cast<size_t>(o.activation_cache_limit_mb) << 20);
  const double reference_s = Since(ref_start);

  sensitivity::SensitivityResult result;
  result.onnx_path = o.onnx_path;
  result.calibration_source = data.synthetic ? "synthetic" : "real";
  result.num_calibration_samples = num_samples;
  result.metric = sensitivity::MetricName(metric);
  result.granularity = o.granularity;
  result.target_precision = o.target_precision;
  result.ptqkit_version = PTQKIT_VERSION;

  const auto probes_start = Clock::now();
  const onnx::ModelProto skeleton = WithoutInitializers(model);
  std::set<std::string> original_initializers;
  for (const auto& t : model.graph().initializer()) original_initializers.insert(t.name());
  RuntimeOptions probe_runtime = runtime;
  probe_runtime.basic_optimizations_only = format.ort_cpu_fusions_unsafe;
  ScanOutcome outcome;
  outcome.num_targets = static_cast<int64_t>(probes.size());
  for (size_t i = 0; i < probes.size(); ++i)
    if (shard::OwnsStrided(static_cast<int64_t>(i), spec)) outcome.targets.push_back(probes[i].target);
  int64_t done = 0;
  const auto report_progress = [&] {
    if (o.progress) o.progress(++done, static_cast<int64_t>(outcome.targets.size()));
  };
  const auto fail = [&](size_t i, const std::string& why) {
    result.failed.emplace_back(probes[i].target, why);
    report_progress();
  };
  // A probe's score, or kNonFiniteScore and a non_finite entry when its outputs turned NaN/Inf
  // (e.g. a quantized Sqrt input of a decomposed LayerNorm hitting 0): the most sensitive target.
  const auto record = [&](size_t i, const ProbeOutputs& outputs) {
    std::string bad = NonFiniteOutputs(outputs);
    double score = bad.empty() ? Score(metric, ref_data, outputs, eval) : kNonFiniteScore;
    if (bad.empty() && !std::isfinite(score)) bad = fmt::format("the {} score is {}", result.metric, score);
    if (!bad.empty()) {
      score = kNonFiniteScore;
      log::Warn("sensitivity: quantizing '{}' makes {}; it ranks first", probes[i].target, bad);
      result.non_finite.emplace_back(probes[i].target, bad);
    }
    result.scores[probes[i].target] = score;
    report_progress();
  };
  std::vector<PendingProbe> pending;
  double probe_run_s = 0.0;  // ONNX Runtime time of probe sessions (the rest is graph building)
  // Evaluates the pending probes in one merged session; if that fails, one by one, so a failure
  // is attributed to the probe that caused it.
  const auto flush = [&] {
    if (pending.empty()) return;
    std::vector<onnx::ModelProto> subs;
    for (const auto& p : pending) subs.push_back(p.submodel);
    const MergedProbes merged = MergeProbes(subs, original_initializers);
    std::vector<std::string> merged_outputs, original_names;
    for (size_t k = 0; k < pending.size(); ++k) {
      for (size_t j = 0; j < pending[k].outputs.size(); ++j) {
        merged_outputs.push_back(merged.outputs[k][j]);
        original_names.push_back(merged.outputs[k][j]);
      }
    }
    const auto run_start = Clock::now();
    struct AddTime {
      double& total;
      Clock::time_point start;
      ~AddTime() { total += Since(start); }
    } timer{probe_run_s, run_start};
    try {
      const ProbeOutputs all = RunOnReference(merged.model, merged_outputs, original_names, ref_data, probe_runtime);
      for (size_t k = 0; k < pending.size(); ++k) {
        ProbeOutputs mine(all.size());
        for (size_t b = 0; b < all.size(); ++b)
          for (size_t j = 0; j < pending[k].outputs.size(); ++j) mine[b][pending[k].outputs[j]] = all[b].at(merged.outputs[k][j]);
        record(pending[k].probe, mine);
      }
    } catch (const std::exception&) {
      for (const auto& p : pending) {
        try {
          const ProbeOutputs mine = RunOnReference(p.submodel, p.outputs, p.outputs, ref_data, probe_runtime);
          record(p.probe, mine);
        } catch (const std::exception& e) {
          fail(p.probe, e.what());
        }
      }
    }
    pending.clear();
  };
  for (size_t i = 0; i < probes.size(); ++i) {
    if (!shard::OwnsStrided(static_cast<int64_t>(i), spec)) continue;
    const Probe& p = probes[i];
    if (p.plan.tensors.empty()) {
      fail(i, "probe inserts no Q/DQ (no quantizable float input)");
      continue;
    }
    try {
      RewriteOptions rewrite;
      rewrite.format = &format;
      rewrite.reserved_names = &original_initializers;
      if (!ref_data.has_boundaries) {
        onnx::ModelProto rewritten = model;
        InsertQdq(&rewritten, p.plan, PlanRanges(p.plan, amax), rewrite);
        const auto run_start = Clock::now();
        const ProbeOutputs outputs = RunOnReference(rewritten, ref_data.output_names, ref_data.output_names, ref_data, probe_runtime);
        probe_run_s += Since(run_start);
        record(i, outputs);
        continue;
      }
      const ProbeCut& cut = p.cut;
      if (cut.outputs.empty()) {  // reaches no graph output: identical to FP32
        result.scores[p.target] = 0.0;
        report_progress();
        continue;
      }
      onnx::ModelProto rewritten = skeleton;
      AddPlanWeights(p.plan, model.graph(), &rewritten);
      InsertQdq(&rewritten, p.plan, PlanRanges(p.plan, amax), rewrite);
      pending.push_back({i, BuildProbeSubmodel(rewritten, model.graph(), cut, ref_data.types), cut.outputs});
    } catch (const std::exception& e) {
      fail(i, e.what());
    }
    if (pending.size() >= kProbesPerSession) flush();
  }
  flush();
  // Failures are found in session-batch order; list them in scan order, which does not depend on
  // how probes were batched into sessions (nor, for merged shards, on the split).
  std::map<std::string, size_t> position;
  for (size_t i = 0; i < probes.size(); ++i) position[probes[i].target] = i;
  const auto by_position = [&](const auto& a, const auto& b) { return position.at(a.first) < position.at(b.first); };
  std::stable_sort(result.failed.begin(), result.failed.end(), by_position);
  std::stable_sort(result.non_finite.begin(), result.non_finite.end(), by_position);
  if (result.scores.empty() && !sharded) {
    if (probes.empty()) {
      throw Error(fmt::format("sensitivity scan of '{}' has nothing to score: no node of the model is in "
                              "the scope (--op_types_scope)", o.onnx_path));
    }
    throw Error(fmt::format("sensitivity scan of '{}' scored nothing: all {} probes failed; the first, '{}': {}",
                            o.onnx_path, result.failed.size(), result.failed.front().first,
                            result.failed.front().second));
  }
  result.timings["calibration_s"] = calibration_s;
  result.timings["reference_s"] = reference_s;
  result.timings["probes_s"] = Since(probes_start);
  result.timings["probes_onnxruntime_s"] = probe_run_s;
  if (sharded) outcome.fingerprint = ScanFingerprint(o, model_digest, data, eval, outcome.num_targets);
  result.timings["total_s"] = Since(start);
  outcome.result = std::move(result);
  return outcome;
}

}  // namespace

std::vector<std::string> ScanCalibrationTensors(const onnx::ModelProto& model, const SensitivityOptions& o) {
  const GraphIndex index(model.graph());
  std::set<std::string> wanted;
  for (const auto& p : MakeProbes(index, o))
    for (const auto& t : p.plan.ActivationTensors()) wanted.insert(t);
  return {wanted.begin(), wanted.end()};
}

sensitivity::SensitivityResult ScoreSensitivity(const SensitivityOptions& o) {
  if (o.shard_count != 1) throw Error("ScoreSensitivity scores every target; use ScoreSensitivityShard for a shard");
  return Scan(o, false).result;
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
