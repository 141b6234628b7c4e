#include "ptqkit/quantize.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <thread>

#include "base/log.h"
#include "calib/method.h"
#include "calib/trt_calibration_cache.h"
#include "base/atomic_file.h"
#include "onnx/graph_index.h"
#include "onnx/model_io.h"
#include "onnx/model_prep.h"
#include "onnx/onnx_library.h"
#include "accuracy/output_agreement.h"
#include "autotune/presets.h"
#include "pipeline/accuracy_budget_search.h"
#include "pipeline/autotune_placement.h"
#include "pipeline/candidate_models.h"
#include "pipeline/canonical_check.h"
#include "pipeline/loss_measurement.h"
#include "pipeline/model_options.h"
#include "pipeline/model_output.h"
#include "pipeline/weight_rounding.h"
#include "runtime/activation_capture.h"
#include "runtime/prepared_model.h"
#include "pipeline/quantize_weight_only.h"
#include "ptqkit/calibration.h"
#include "ptqkit/error.h"
#include "quant/formats.h"
#include "quant/model_placement.h"
#include "quant/ort_bias_overflow.h"
#include "quant/qdq_rewrite.h"
#include "quant/runtime_forms.h"
#include "quant/weight_qdq_fold.h"

namespace ptqkit {
namespace fs = std::filesystem;
namespace {

using Clock = std::chrono::steady_clock;

std::string DefaultOutputPath(const std::string& input) {
  const fs::path in(input);
  return (in.parent_path() / (in.stem().string() + ".quant.onnx")).string();
}

// The ModelOpt options whose values only make sense together with others.
void CheckModelOptOptions(const QuantizeOptions& o) {
  if (o.direct_io_types && o.high_precision_dtype == "fp32") {
    throw Error("--direct_io_types changes the graph inputs/outputs to the --high_precision_dtype type; with fp32 "
                "(ptqkit's default; ModelOpt's is fp16) there is nothing to change: add --high_precision_dtype fp16 "
                "or bf16, or leave the flag out");
  }
  if (!o.input_shapes_profile.empty()) {
    if (o.input_shapes_profile.size() != o.calibration_eps.size()) {
      throw Error(fmt::format("--input_shapes_profile has {} entr{} but --calibration_eps has {} provider(s): give one "
                              "object per provider, in the same order",
                              o.input_shapes_profile.size(), o.input_shapes_profile.size() == 1 ? "y" : "ies",
                              o.calibration_eps.size()));
    }
    for (size_t k = 0; k < o.calibration_eps.size(); ++k) {
      if (o.calibration_eps[k] != "trt" && !o.input_shapes_profile[k].empty()) {
        throw Error(fmt::format("--input_shapes_profile entry {} is for the {} provider, which takes no shape "
                                "profile (only trt does): make it {{}}",
                                k, o.calibration_eps[k]));
      }
    }
  }
  if (!o.calibration_cache_path.empty() && !o.calibration_cache.empty()) {
    throw Error("give --calibration_cache (ptqkit's table) or --calibration_cache_path (TensorRT's cache), not both");
  }
  if (!o.calibration_cache_path.empty() && o.accuracy_budget >= 0) {
    throw Error("--accuracy_budget calibrates its candidates from data; it cannot take scales from "
                "--calibration_cache_path");
  }
  if (!o.save_calibration_cache_path.empty() && o.quantize_mode != "int8") {
    throw Error(fmt::format("--save_calibration_cache_path writes TensorRT's INT8 calibration cache; --quantize_mode {} "
                            "has no such cache (use --save_calibration_cache for ptqkit's table)",
                            o.quantize_mode));
  }
  const bool has_trt = std::find(o.calibration_eps.begin(), o.calibration_eps.end(), "trt") != o.calibration_eps.end();
  if (!o.trt_plugins.empty() && !has_trt) {
    log::Info("--trt_plugins: adding the trt provider in front of --calibration_eps (as ModelOpt does)");
  }
}

void CheckOptions(const QuantizeOptions& o, const std::string& output) {
  if (o.onnx_path.empty()) throw Error("--onnx_path is required");
  const QuantFormat& format = FindFormat(o.quantize_mode, "--quantize_mode");
  if (!format.placement.weight_only && !o.calibration_method.empty() &&
      IsWeightOnlyCalibrationMethod(o.calibration_method)) {
    const auto weight_only = FormatNamesWhere([](const QuantFormat& f) { return f.placement.weight_only; });
    throw Error(fmt::format("--calibration_method {} applies to the weight-only modes ({}) only (int8/fp8 take max, "
                            "entropy, percentile or mse)",
                            o.calibration_method, fmt::join(weight_only, ", ")));
  }
  if (o.high_precision_dtype != "fp32" && o.high_precision_dtype != "fp16" && o.high_precision_dtype != "bf16") {
    throw Error(fmt::format("unknown --high_precision_dtype '{}' (expected fp32, fp16 or bf16)", o.high_precision_dtype));
  }
  calib::CheckPercentile(o.percentile);
  if (o.calibration_batch_size < 0) throw Error("--calibration_batch_size must be positive");
  if (o.intra_op_num_threads < 0) {
    throw Error(fmt::format("--intra_op_num_threads must be 0 (ONNX Runtime's default) or more, got {}",
                            o.intra_op_num_threads));
  }
  if (o.accuracy_budget >= 0) accuracy::ParseBudgetMetric(o.accuracy_budget_metric);  // names a bad metric early
  const bool mixed_precision = !o.mixed_precision.empty() || !o.int8_nodes.empty();
  if (o.accuracy_budget >= 0 && format.placement.weight_only && !mixed_precision) {
    throw Error(fmt::format("--accuracy_budget applies to {}, or to int4 with --mixed_precision int4,int8",
                            FormatNames(true)));
  }
  if (mixed_precision && format.name != "int4") {
    throw Error(fmt::format("--mixed_precision / --int8_nodes apply to --quantize_mode int4 (got {})", format.name));
  }
  if (!(o.smoothquant_alpha >= 0.0 && o.smoothquant_alpha <= 1.0)) {
    throw Error(fmt::format("--smoothquant_alpha must be in [0, 1] (0 = off), got {}", o.smoothquant_alpha));
  }
  if (o.weight_rounding != "nearest" && o.weight_rounding != "gptq") {
    throw Error(fmt::format("unknown --weight_rounding '{}' (expected nearest or gptq)", o.weight_rounding));
  }
  if (o.weight_rounding == "gptq" && format.placement.weight_only) {
    throw Error(fmt::format("--weight_rounding gptq applies to int8/fp8; {} chooses its weights with "
                            "--calibration_method awq_clip/awq_lite",
                            format.name));
  }
  if (o.eval_samples < 0) throw Error(fmt::format("--eval_samples must be >= 0, got {}", o.eval_samples));
  const RuntimeForm& runtime = EffectiveRuntimeForm(o.target_runtime, format);  // names an unknown runtime
  const bool ort_containers = format.block_codec != nullptr && format.block_codec->ort_cpu_min_opset > 0;
  if (runtime.name != o.target_runtime && !ort_containers) {
    log::Info("--target_runtime {} writes the same file as trt in {} mode: its form applies to int8 (FP8 Q/DQ carry "
              "no zero point, a form ONNX Runtime computes as written at every level)",
              o.target_runtime, format.name);
  }
  if (o.reduce_range && format.reduced_range_qmax == 0) {
    throw Error(fmt::format("--reduce_range applies to --quantize_mode int8 only (got {})", o.quantize_mode));
  }
  for (const auto& ep : o.calibration_eps) CheckExecutionProviderName(ep);
  CheckModelOptOptions(o);
  autotune::CheckAutotuneOptions(o.autotune, o.quantize_mode);
  std::error_code ec;
  const fs::path dir = fs::path(output).parent_path().empty() ? fs::path(".") : fs::path(output).parent_path();
  if (!fs::is_directory(dir, ec)) {
    throw Error(fmt::format("cannot write '{}': folder '{}' does not exist", output, dir.string()), Error::Kind::kIo);
  }
}

// --weight_rounding gptq, on the final plan: the weights' codes from one more pass over the
// calibration samples (the data's view is put back on the evaluated samples afterwards).
void RoundWeights(const QuantizeOptions& o, const QuantFormat& format, const ModelPlacement& plan,
                  onnx::ModelProto* model, CalibrationData* data, const EvalSplit& split, QuantizeReport* report) {
  if (data == nullptr) {
    log::Warn("--weight_rounding gptq needs calibration data to measure each layer's inputs; with the ranges from a "
              "calibration cache the weights are rounded to nearest");
    return;
  }
  const RewriteOptions rewrite = RewriteOptionsFor(o, format);
  WeightRoundingSettings settings;
  settings.rewrite = &rewrite;
  settings.correct_conv_biases = o.bias_correction && o.save_calibration_cache.empty();
  settings.threads = o.intra_op_num_threads > 0 ? o.intra_op_num_threads
                                                : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  UseCalibrationSamples(data, split);
  RoundWeightsWithHessian(model, plan, *data, Runtime(o), settings, &report->weight_rounding);
  if (!split.evaluated.empty()) UseEvaluationSamples(data, split);
}

// TensorRT's calibration cache (--calibration_cache_path): tensor -> scale. Its scales replace
// calibrated ones; `uncached` counts the planned activations it has none for (those are calibrated).
std::map<std::string, float> ReadTrtScales(const QuantizeOptions& o, const ModelPlacement& plan, int64_t* uncached) {
  *uncached = 0;
  if (o.calibration_cache_path.empty()) return {};
  const std::map<std::string, float> scales = calib::ReadTrtCalibrationCache(o.calibration_cache_path);
  for (const auto& t : plan.ActivationTensors()) *uncached += scales.count(t) == 0;
  if (*uncached > 0) {
    log::Warn("--calibration_cache_path: {} of {} planned activation(s) have no scale in '{}'; they are calibrated "
              "from the data",
              *uncached, plan.ActivationTensors().size(), o.calibration_cache_path);
  }
  return scales;
}

// What calibration gives the rest of the run.
struct Calibration {
  calib::CalibrationTable table;
  std::optional<CalibrationData> data;  // none: every range came from a cache
  EvalSplit split;
  TensorDrops drops;                                            // left in float by every plan
  std::map<std::string, ConvInputStatistics> conv_input_means;  // bias correction; empty: none
};

// One pass of ONNX Runtime over the calibration samples: every planned activation's statistics,
// and the Conv input means bias correction needs. Depthwise equalization and smoothing edit the
// model first (they change the tensors calibration observes; `plan` is made again after them).
void CalibrateOnData(const QuantizeOptions& o, calib::Method method, PreparedModel& prepared, CanonicalForm* canonical,
                     std::unique_ptr<ModelPlacement>* plan, Calibration* c, QuantizeReport* report) {
  onnx::ModelProto& model = prepared.proto;
  c->data = OpenCalibrationData(prepared, CalibrationRequest(o));
  CalibrationData& data = *c->data;
  report->synthetic_data = data.synthetic;
  c->split = SplitForEvaluation(data, o.eval_samples);
  UseCalibrationSamples(&data, c->split);
  CompareCanonicalForm(canonical, model, &data, Runtime(o), report);
  // Not when the statistics are saved: a calibration cache describes the model as given
  // (canonicalized; a run from the cache has no data to measure channels with), and a run from it
  // must reproduce the saving run's model.
  const bool saving = !o.save_calibration_cache.empty();
  if (o.depthwise_equalization && !saving) {
    report->equalized_depthwise_convs = EqualizeDepthwiseConvInputs(&model, **plan, data, Runtime(o));
    if (report->equalized_depthwise_convs > 0) *plan = std::make_unique<ModelPlacement>(&model, PlacementFor(o));
  }
  if (o.quantize_mode == "int8" && o.smoothquant_alpha > 0 && !saving) {
    const RuntimeForm& form = EffectiveRuntimeForm(o.target_runtime, FindFormat(o.quantize_mode, "--quantize_mode"));
    report->smoothed_matmul_inputs = SmoothMatMulInputs(&model, **plan, data, form, Runtime(o), o.smoothquant_alpha);
  }
  CaptureRequest request;
  request.tensors = (*plan)->ActivationTensors();
  // Autotune's candidates keep nodes in float, which can move a Q/DQ (a residual Add's other
  // input): calibrate those tensors too, in the same pass.
  if (!o.autotune.mode.empty()) request.tensors = AutotuneCalibrationTensors(model, PlacementFor(o), **plan);
  request.histograms = method != calib::Method::kMax;
  request.batch_size = data.batch_size;
  request.num_batches = data.num_batches;
  request.progress = o.progress;
  // Bias correction's Conv input means come out of the same pass (not when saving, as above).
  if (o.bias_correction && !saving) request.channel_axis = ConvInputChannels(**plan);
  CaptureResult captured = CaptureStatistics(model, data.set, request, Runtime(o));
  for (const auto& t : captured.not_float) c->drops.emplace_back(t, "input is not a float tensor");
  c->table = std::move(captured.table);
  for (const auto& [name, stats] : c->table.tensors) {
    // A tensor that never took a value has no range: a control-flow branch that no calibration
    // sample takes (an If on a sample rate the data does not use). Its nodes stay in float.
    // (A tensor that took only NaN/Inf is an error further on, naming it.)
    if (stats.finite_count() == 0 && stats.nonfinite_count() == 0) {
      log::Warn("tensor '{}' was never computed during calibration (a control-flow branch the data never takes?); "
                "the nodes reading it stay in float",
                name);
      c->drops.emplace_back(name, "its input was never computed during calibration");
    }
    if (stats.nonfinite_count() > 0) {
      log::Warn("tensor '{}': {} NaN/Inf value(s) ignored during calibration", name, stats.nonfinite_count());
    }
  }
  c->conv_input_means = ConvInputMeans(captured.channels);
  report->execution_providers = captured.providers;
  report->num_calibration_samples = captured.num_samples;
  report->batch_size = request.batch_size;
}

// The ranges: from a calibration table, from TensorRT's cache when it has every scale
// (`every_scale_cached`), else from the data (CalibrateOnData).
Calibration Calibrate(const QuantizeOptions& o, calib::Method method, PreparedModel& prepared, CanonicalForm* canonical,
                      std::unique_ptr<ModelPlacement>* plan, bool every_scale_cached, QuantizeReport* report) {
  const auto start = Clock::now();
  Calibration c;
  if (!o.calibration_cache.empty()) {
    c.table = calib::CalibrationTable::Load(o.calibration_cache);
    report->calibration_from_cache = true;
    log::Info("calibration cache: no data to measure channel statistics with, so no bias correction or smoothing");
  } else if (every_scale_cached) {
    report->calibration_from_cache = true;
    log::Info("every scale comes from --calibration_cache_path: no data is read, so no bias correction or smoothing");
  } else {
    CalibrateOnData(o, method, prepared, canonical, plan, &c, report);
  }
  if (!c.data) CompareCanonicalForm(canonical, prepared.proto, nullptr, Runtime(o), report);  // counts only
  report->calibration_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return c;
}

// The FP32 outputs on the held-out samples, before the graph is rewritten: what the loss report,
// the budget and autotune compare with.
struct Reference {
  accuracy::BatchOutputs outputs;
  accuracy::SampleRange range;
  double seconds = 0.0;
};

Reference HeldOutReference(const QuantizeOptions& o, const onnx::ModelProto& model, Calibration& c) {
  Reference r;
  if (c.split.evaluated.empty()) return r;
  const auto start = Clock::now();
  r.range = UseEvaluationSamples(&*c.data, c.split, o.eval_mask_input);
  r.outputs = accuracy::RunOutputs(model, c.data->set, r.range, Runtime(o));
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return r;
}

// The nodes the searches keep in float: --accuracy_budget's, then --autotune's (over the budget's).
struct SearchChoices {
  std::vector<std::string> budget, autotune;
};

SearchChoices SearchPlacements(const QuantizeOptions& o, PreparedModel& prepared, const CandidateBuilder& build,
                               std::optional<CandidateScorer>& scorer, Calibration& c,
                               std::unique_ptr<ModelPlacement>* plan, QuantizeReport* report) {
  SearchChoices chosen;
  KeptInFloat kept_in_float;  // the searches' choices, with the reason the report gives
  if (o.accuracy_budget >= 0) {
    if (!c.data || (c.split.evaluated.empty() && !o.accuracy_eval)) {
      throw Error("--accuracy_budget needs calibration data (not a --calibration_cache: the ranking scan calibrates) "
                  "and held-out samples (--eval_samples > 0) or, in Python, an accuracy_eval scorer");
    }
    chosen.budget = SearchAccuracyBudget(o, prepared, build, *scorer, (*plan)->QuantizedNodes(), report);
    // The final plan keeps the search's choice in float too.
    for (const auto& node : chosen.budget) kept_in_float.emplace(node, "kept in float by --accuracy_budget");
    if (!chosen.budget.empty()) *plan = build.Plan(&prepared.proto, kept_in_float);
  }
  if (o.autotune.mode.empty()) return chosen;
  if (!c.data || c.split.evaluated.empty()) {
    throw Error("--autotune needs calibration data (not a --calibration_cache) and evaluation samples "
                "(--eval_samples > 0): every candidate's accuracy is checked on them");
  }
  onnx::ModelProto& model = prepared.proto;
  const auto with_budget = [&](std::vector<std::string> in_float) {
    in_float.insert(in_float.end(), chosen.budget.begin(), chosen.budget.end());
    return in_float;
  };
  AutotuneInputs in;
  in.options = &o;
  in.fp32 = &model;
  in.build = [&](const std::vector<std::string>& in_float) { return build.Build(model, with_budget(in_float)); };
  in.divergence = [&](const onnx::ModelProto& candidate) { return (*scorer)(candidate); };
  in.divergence_metric = scorer->metric_name();
  in.quantized_nodes = (*plan)->QuantizedNodes();
  in.feeds = c.data->set.ReadBatch(0, c.data->batch_size);
  chosen.autotune = AutotunePlacement(in, &report->autotune);
  const std::string why = report->autotune.gate_passed
                              ? "kept in float by --autotune (faster)"
                              : "no Q/DQ: autotune's best placement is not --autotune_min_speedup x faster than FP32";
  for (const auto& node : chosen.autotune) kept_in_float.emplace(node, why);
  if (!chosen.autotune.empty()) *plan = build.Plan(&model, kept_in_float);
  return chosen;
}

// The runtime form's part of the report: the integer kernel each quantized op type runs as, and
// which have none there.
void ReportRuntimeForm(const QuantizeOptions& o, const QuantFormat& format, const std::map<std::string, int>& by_op,
                       QuantizeReport* report) {
  const RuntimeForm& form = EffectiveRuntimeForm(o.target_runtime, format);
  report->runtime_form = std::string(form.name);
  if (form.kernels == nullptr) return;
  for (const auto& [op, n] : by_op) {
    const IntegerKernel* kernel = FindIntegerKernel(form, op);
    if (kernel == nullptr) report->without_integer_kernel[op] = n;
    if (kernel != nullptr) report->integer_kernel[op] = std::string(kernel->kernel);
  }
}

// Writing the FP32 model under a quantized name would hide that nothing was done: an error, unless
// the user's or a search's exclusions asked for it (then a warning).
void CheckSomethingQuantized(const QuantizeOptions& o, const RewriteStats& stats, const SearchChoices& chosen,
                             const QuantizeReport& report) {
  const bool excluded = !o.nodes_to_exclude.empty() || !o.op_types_to_exclude.empty() || !chosen.budget.empty() ||
                        !chosen.autotune.empty();
  if (stats.qdq_pairs > 0) return;
  if (excluded) {
    log::Warn("every quantization candidate was excluded: the output has no Q/DQ node");
    return;
  }
  std::string why;
  for (size_t k = 0; k < std::min<size_t>(3, report.left_in_float.size()); ++k) {
    why += fmt::format("; '{}' {}", report.left_in_float[k].first, report.left_in_float[k].second);
  }
  throw Error(fmt::format("no node of '{}' was quantized ({} candidate(s) left in float{}); nothing was written. "
                          "Choose nodes with --op_types_to_quantize or --nodes_to_quantize",
                          o.onnx_path, report.left_in_float.size(), why),
              Error::Kind::kUnsupported);
}

// The loss report on the held-out samples, or why there is none.
void ReportLoss(const QuantizeOptions& o, onnx::ModelProto* model, Calibration& c, const Reference& reference,
                const RuntimeOptions& eval_runtime, const std::map<std::string, float>& amax, const QuantFormat& format,
                QuantizeReport* report) {
  if (c.split.evaluated.empty()) {
    report->loss.not_evaluated_because = o.eval_samples <= 0 ? "--eval_samples 0"
                                         : report->calibration_from_cache ? "the ranges came from a calibration cache"
                                                                          : "no calibration samples";
    return;
  }
  const auto start = Clock::now();
  // The model is already written (StagedOutput): each weight's Q/DQ may now be folded into the
  // weight in place. On a model whose weights ONNX Runtime gets as inputs it would otherwise
  // quantize every weight again at every run, one element at a time along a MatMul weight's last
  // axis. Same bits, no second copy of the weights.
  FoldWeightQdqForSession(model);
  report->loss = MeasureLoss(reference.outputs, *model, *c.data, reference.range, c.split.held_out, eval_runtime,
                             c.table, amax, format.grid);
  report->loss.sample_indices = c.split.evaluated;
  report->loss.seconds = reference.seconds + std::chrono::duration<double>(Clock::now() - start).count();
  if (report->accuracy_budget.used && report->accuracy_budget.met) report->loss.warning.clear();
  if (!report->loss.warning.empty()) log::Warn("{}", report->loss.warning);
}

// --save_calibration_cache (ptqkit's table) and --save_calibration_cache_path (TensorRT's scales),
// after the model: a save that fails leaves no cache behind.
void SaveCalibrationCaches(const QuantizeOptions& o, const Calibration& c, const std::map<std::string, float>& amax,
                           const QuantFormat& format) {
  if (!o.save_calibration_cache.empty()) c.table.Save(o.save_calibration_cache);
  if (o.save_calibration_cache_path.empty()) return;
  std::map<std::string, float> scales;
  for (const auto& [tensor, a] : amax) scales[tensor] = a / format.qmax;
  WriteFileAtomically(o.save_calibration_cache_path, calib::TrtCalibrationCacheText(scales));
}

}  // namespace

// The steps, in order: options and files checked; the model loaded, upgraded and canonicalized;
// the placement planned; ranges calibrated; FP32 reference outputs on the held-out samples; the
// searches (budget, autotune) that keep nodes in float; weight rounding; the Q/DQ rewrite;
// precision conversion; the model written, then the loss report; the caches saved.
QuantizeReport Quantize(const QuantizeOptions& o) {
  const auto start = Clock::now();
  QuantizeReport report;
  report.output_path = o.output_path.empty() ? DefaultOutputPath(o.onnx_path) : o.output_path;
  CheckOptions(o, report.output_path);
  QuantizeFiles(o, report.output_path).Check();  // again with external data, once the model is read
  const QuantFormat& format = FindFormat(o.quantize_mode, "--quantize_mode");
  if (format.placement.weight_only) return QuantizeWeightOnly(o, format, std::move(report), start);
  // No method means mse for the activation-calibrated modes (ModelOpt defaults int8 to entropy;
  // mse is never far from max and often better on real models, where entropy can lose a lot).
  report.calibration_method = o.calibration_method.empty() ? "mse" : o.calibration_method;
  const calib::Method method = calib::ParseMethod(report.calibration_method);

  PreparedModel prepared = LoadPreparedModel(o.onnx_path, QuantizeFiles(o, report.output_path));
  onnx::ModelProto& model = prepared.proto;
  report.original_opset = prepared.original_opset;
  onnxio::UpgradeOpset(&model, format.min_opset);  // e.g. FP8 Q/DQ without zero points: opset 21
  CanonicalForm canonical;
  ApplyModelOptions(o, format.min_opset, &prepared, &canonical);
  report.output_opset = onnxio::DefaultOpset(model);
  auto plan = std::make_unique<ModelPlacement>(&model, PlacementFor(o));

  int64_t trt_uncached = 0;
  const std::map<std::string, float> trt_scales = ReadTrtScales(o, *plan, &trt_uncached);
  Calibration c = Calibrate(o, method, prepared, &canonical, &plan, !trt_scales.empty() && trt_uncached == 0, &report);
  const Reference reference = HeldOutReference(o, model, c);

  for (const auto& [tensor, why] : c.drops) plan->DropTensor(tensor, why);
  const CandidateBuilder build(CandidateRecipe{&o, &format, method, &c.table, c.drops, trt_scales, c.conv_input_means});
  RuntimeOptions eval_runtime = Runtime(o);
  // The report judges the Q/DQ graph as written (fake-quant): ONNX Runtime's default level fuses
  // it into kernels whose numerics depend on its version (1.30, bundled here, cannot even load
  // FP8 Q/DQ models at that level; 1.32 can). tests/corpus checks the default level separately.
  eval_runtime.basic_optimizations_only = true;
  // Except for a form written for ONNX Runtime's fused integer kernels: its users run them, at the
  // default level, and that is what the report must measure.
  if (EffectiveRuntimeForm(o.target_runtime, format).quantize_op_outputs) eval_runtime.basic_optimizations_only = false;
  // Budget and autotune candidates are scored alike (one FP32 score for a caller's scorer).
  std::optional<CandidateScorer> scorer;
  if (c.data) scorer.emplace(o, reference.outputs, *c.data, reference.range, eval_runtime);
  const SearchChoices chosen = SearchPlacements(o, prepared, build, scorer, c, &plan, &report);

  if (o.weight_rounding == "gptq") RoundWeights(o, format, *plan, &model, c.data ? &*c.data : nullptr, c.split, &report);
  const std::map<std::string, float> amax = build.Ranges(*plan);
  report.quantized_by_op_type = plan->QuantizedByOpType();
  report.left_in_float = plan->LeftInFloat();
  const RewriteStats stats = build.Rewrite(plan.get(), amax, &report.bias_corrected_convs);
  report.qdq_pairs = stats.qdq_pairs;
  report.dynamic_matmuls = stats.dynamic_matmuls;
  report.int8_embeddings = stats.int8_embeddings;
  ReportRuntimeForm(o, format, report.quantized_by_op_type, &report);
  CheckSomethingQuantized(o, stats, chosen, report);
  ConvertPrecision(&model, o, &report);
  report.ort_fp16_bias_overflows = CountFp16BiasOverflows(model.graph());
  // Written (not yet visible) before the loss report, which may fold the weights in place.
  StagedOutput output(&model, o, report.output_path);
  ReportLoss(o, &model, c, reference, eval_runtime, amax, format, &report);
  report.total_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  output.Commit(o, report);
  SaveCalibrationCaches(o, c, amax, format);
  report.total_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return report;
}

}  // namespace ptqkit
