// The steps of Quantize() that are particular to the activation formats (int8, fp8): the
// placement with activations, their ranges (or a cache's), the searches that keep nodes in float,
// GPTQ rounding and the Q/DQ rewrite (quantize_run.h).
#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "autotune/presets.h"
#include "base/log.h"
#include "calib/trt_calibration_cache.h"
#include "pipeline/accuracy_budget_search.h"
#include "pipeline/autotune_placement.h"
#include "pipeline/canonical_check.h"
#include "pipeline/format_choice.h"
#include "pipeline/model_options.h"
#include "pipeline/quantize_run.h"
#include "pipeline/weight_rounding.h"
#include "ptqkit/error.h"
#include "quant/placement/runtime_forms.h"
#include "runtime/activation_capture.h"

namespace ptqkit {
namespace {

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

// Depthwise equalization and smoothing edit the model before calibration (they change the tensors
// it observes; the plan is made again after them). Not when the statistics are saved: a calibration
// cache describes the model as given (canonicalized; a run from the cache has no data to measure
// channels with), and a run from it must reproduce the saving run's model.
void EditBeforeCalibration(QuantizeRun& run) {
  const QuantizeOptions& o = run.o;
  onnx::ModelProto& model = run.prepared.proto;
  if (!o.save_calibration_cache.empty()) return;
  if (o.depthwise_equalization) {
    run.report.equalized_depthwise_convs = EqualizeDepthwiseConvInputs(&model, *run.plan, *run.data, Runtime(o));
    if (run.report.equalized_depthwise_convs > 0) run.plan = std::make_unique<ModelPlacement>(&model, PlacementFor(o));
  }
  if (run.format.name == "int8" && o.smoothquant_alpha > 0) {
    const RuntimeForm& form = EffectiveRuntimeForm(o.target_runtime, run.format);
    run.report.smoothed_matmul_inputs = SmoothMatMulInputs(&model, *run.plan, *run.data, form, Runtime(o),
                                                           o.smoothquant_alpha, &run.report.smoothing_muls_inserted);
    if (run.report.smoothing_muls_inserted > 0) run.plan = std::make_unique<ModelPlacement>(&model, PlacementFor(o));
  }
}

// One pass of ONNX Runtime over the calibration samples: every planned activation's statistics,
// and the Conv input means bias correction needs.
void CaptureActivationStatistics(QuantizeRun& run) {
  const QuantizeOptions& o = run.o;
  onnx::ModelProto& model = run.prepared.proto;
  CalibrationData& data = *run.data;
  CaptureRequest request;
  request.tensors = run.plan->ActivationTensors();
  // Autotune's candidates keep nodes in float, which can move a Q/DQ (a residual Add's other
  // input): calibrate those tensors too, in the same pass.
  if (!o.autotune.mode.empty()) request.tensors = AutotuneCalibrationTensors(model, PlacementFor(o), *run.plan);
  request.histograms = calib::ParseMethod(run.method) != calib::Method::kMax;
  request.batch_size = data.batch_size;
  request.num_batches = data.num_batches;
  request.progress = o.progress;
  // Bias correction's Conv input means come out of the same pass (not when saving, as above).
  if (o.bias_correction && o.save_calibration_cache.empty()) request.channel_axis = ConvInputChannels(*run.plan);
  CaptureResult captured = CaptureStatistics(model, data.set, request, Runtime(o));
  for (const auto& t : captured.not_float) run.drops.emplace_back(t, "input is not a float tensor");
  run.table = std::move(captured.table);
  for (const auto& [name, stats] : run.table.tensors) {
    // A tensor that never took a value has no range: a control-flow branch that no calibration
    // sample takes (an If on a sample rate the data does not use). Its nodes stay in float.
    // (A tensor that took only NaN/Inf is an error further on, naming it.)
    if (stats.finite_count() == 0 && stats.nonfinite_count() == 0) {
      log::Warn("tensor '{}' was never computed during calibration (a control-flow branch the data never takes?); "
                "the nodes reading it stay in float",
                name);
      run.drops.emplace_back(name, "its input was never computed during calibration");
    }
    if (stats.nonfinite_count() > 0) {
      log::Warn("tensor '{}': {} NaN/Inf value(s) ignored during calibration", name, stats.nonfinite_count());
    }
  }
  run.conv_input_means = ConvInputMeans(captured.channels);
  run.report.execution_providers = captured.providers;
  run.report.num_calibration_samples = captured.num_samples;
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

// --autotune over the budget's choice: the nodes it keeps in float.
std::vector<std::string> AutotuneNodes(QuantizeRun& run, CandidateScorer& scorer, KeptInFloat* kept_in_float) {
  const QuantizeOptions& o = run.o;
  if (!run.data || run.split.evaluated.empty()) {
    throw Error("--autotune needs calibration data (not a --calibration_cache) and evaluation samples "
                "(--eval_samples > 0): every candidate's accuracy is checked on them");
  }
  onnx::ModelProto& model = run.prepared.proto;
  const CandidateBuilder& build = *run.build;
  const std::vector<std::string>& budget = run.chosen.budget;
  const auto with_budget = [&](std::vector<std::string> in_float) {
    in_float.insert(in_float.end(), budget.begin(), budget.end());
    return in_float;
  };
  AutotuneInputs in;
  in.options = &o;
  in.fp32 = &model;
  in.build = [&](const std::vector<std::string>& in_float) { return build.Build(model, with_budget(in_float)); };
  in.divergence = [&](const onnx::ModelProto& candidate) { return scorer(candidate); };
  in.divergence_metric = scorer.metric_name();
  in.quantized_nodes = run.plan->QuantizedNodes();
  in.feeds = run.data->set.ReadBatch(0, run.data->batch_size);
  std::vector<std::string> chosen = AutotunePlacement(in, &run.report.autotune);
  const std::string why = run.report.autotune.gate_passed
                              ? "kept in float by --autotune (faster)"
                              : "no Q/DQ: autotune's best placement is not --autotune_min_speedup x faster than FP32";
  for (const auto& node : chosen) kept_in_float->emplace(node, why);
  return chosen;
}

}  // namespace

void PlanActivations(QuantizeRun& run) {
  run.plan = std::make_unique<ModelPlacement>(&run.prepared.proto, PlacementFor(run.o));
  run.trt_scales = ReadTrtScales(run.o, *run.plan, &run.trt_uncached);
}

bool ActivationRangesFromData(const QuantizeRun& run) {
  const bool every_scale_cached = !run.trt_scales.empty() && run.trt_uncached == 0;
  return run.o.calibration_cache.empty() && !every_scale_cached;
}

// The ranges: from a calibration table, from TensorRT's cache when it has every scale, else from
// the data the run opened.
void CalibrateActivationRanges(QuantizeRun& run) {
  if (!run.o.calibration_cache.empty()) {
    run.table = calib::CalibrationTable::Load(run.o.calibration_cache);
    run.report.calibration_from_cache = true;
    log::Info("calibration cache: no data to measure channel statistics with, so no bias correction or smoothing");
  } else if (!ActivationRangesFromData(run)) {
    run.report.calibration_from_cache = true;
    log::Info("every scale comes from --calibration_cache_path: no data is read, so no bias correction or smoothing");
  } else {
    EditBeforeCalibration(run);
    CaptureActivationStatistics(run);
  }
}

void SearchActivationPlacements(QuantizeRun& run) {
  const QuantizeOptions& o = run.o;
  for (const auto& [tensor, why] : run.drops) run.plan->DropTensor(tensor, why);
  run.build.emplace(CandidateRecipe{&o, &run.format, calib::ParseMethod(run.method), &run.table, run.drops,
                                    run.trt_scales, run.conv_input_means, run.second_format, {}});
  // Budget and autotune candidates are scored alike (one FP32 score for a caller's scorer).
  std::optional<CandidateScorer> scorer;
  if (run.data) scorer.emplace(o, run.reference, *run.data, run.range, run.eval_runtime);
  std::optional<FormatChoice> formats;
  if (run.second_format != nullptr) {
    // The node scans see the main graph (a node inside an If or Loop branch has no probe of its own).
    const std::string first(run.format.name), second(run.second_format->name);
    formats = ChooseNodeFormats(o, run.prepared, second, run.plan->QuantizedNodes(/*main_graph_only=*/true),
                                run.report);
    if (scorer && !run.split.evaluated.empty()) {
      std::set<std::string> all;
      for (const auto& [node, op] : run.plan->QuantizedNodes()) all.insert(node);
      KeepTheBestFormatCandidate(&*formats, first, second, all, [&](const std::set<std::string>& nodes) {
        run.build->UseSecondFormatFor(nodes);
        return scorer->ScoreDisposable(run.build->Build(run.prepared.proto, {}));
      }, &run.report.format_candidates);
    }
    run.report.node_formats = formats->nodes;
    run.build->UseSecondFormatFor(formats->second_format_nodes);
    run.plan = run.build->Plan(&run.prepared.proto, {});
  }
  KeptInFloat kept_in_float;  // the searches' choices, with the reason the report gives
  if (o.accuracy_budget >= 0) {
    if (!run.data || (run.split.evaluated.empty() && !o.accuracy_eval)) {
      throw Error("--accuracy_budget needs calibration data (not a --calibration_cache: the ranking scan calibrates) "
                  "and held-out samples (--eval_samples > 0) or, in Python, an accuracy_eval scorer");
    }
    run.chosen.budget = SearchAccuracyBudget(o, run.prepared, *run.build, *scorer, run.plan->QuantizedNodes(),
                                             &run.report, formats ? &formats->ranking : nullptr);
    // The final plan keeps the search's choice in float too.
    for (const auto& node : run.chosen.budget) kept_in_float.emplace(node, "kept in float by --accuracy_budget");
    if (!run.chosen.budget.empty()) run.plan = run.build->Plan(&run.prepared.proto, kept_in_float);
  }
  if (o.autotune.mode.empty()) return;
  run.chosen.autotune = AutotuneNodes(run, *scorer, &kept_in_float);
  if (!run.chosen.autotune.empty()) run.plan = run.build->Plan(&run.prepared.proto, kept_in_float);
}

// --weight_rounding gptq, on the final plan: the weights' codes from one more pass over the
// calibration samples (the data's view is put back on the evaluated samples afterwards).
void RoundActivationFormatWeights(QuantizeRun& run) {
  const QuantizeOptions& o = run.o;
  if (o.weight_rounding != "gptq") return;
  if (!run.data) {
    log::Warn("--weight_rounding gptq needs calibration data to measure each layer's inputs; with the ranges from a "
              "calibration cache the weights are rounded to nearest");
    return;
  }
  const RewriteOptions rewrite = RewriteOptionsFor(o, run.format);
  WeightRoundingSettings settings;
  settings.rewrite = &rewrite;
  settings.correct_conv_biases = o.bias_correction && o.save_calibration_cache.empty();
  settings.threads = o.intra_op_num_threads > 0 ? o.intra_op_num_threads
                                                : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  UseCalibrationSamples(&*run.data, run.split);
  RoundWeightsWithHessian(&run.prepared.proto, *run.plan, *run.data, Runtime(o), settings,
                          &run.report.weight_rounding);
  if (!run.split.evaluated.empty()) UseEvaluationSamples(&*run.data, run.split);
}

void RewriteActivations(QuantizeRun& run) {
  run.amax = run.build->Ranges(*run.plan);
  run.report.quantized_by_op_type = run.plan->QuantizedByOpType();
  run.report.left_in_float = run.plan->LeftInFloat();
  run.stats = run.build->Rewrite(run.plan.get(), run.amax, &run.report.bias_corrected_convs);
  run.report.dynamic_matmuls = run.stats.dynamic_matmuls;
  run.report.int8_embeddings = run.stats.int8_embeddings;
  ReportRuntimeForm(run.o, run.format, run.report.quantized_by_op_type, &run.report);
  CheckSomethingQuantized(run.o, run.stats, run.chosen, run.report);
}

}  // namespace ptqkit
