#include "ptqkit/quantize.h"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>

#include "base/log.h"
#include "calib/method.h"
#include "calib/scale_search.h"
#include "base/temporary_folder.h"
#include "onnx/graph_index.h"
#include "onnx/model_io.h"
#include "onnx/model_prep.h"
#include "onnx/onnx_library.h"
#include "accuracy/output_agreement.h"
#include "accuracy/accuracy_budget.h"
#include "pipeline/activation_capture.h"
#include "pipeline/channel_capture.h"
#include "quant/activation_smoothing.h"
#include "quant/bias_correction.h"
#include "pipeline/loss_measurement.h"
#include "pipeline/model_output.h"
#include "pipeline/prepared_model.h"
#include "pipeline/quantize_int4.h"
#include "ptqkit/calibration.h"
#include "ptqkit/error.h"
#include "ptqkit/sensitivity.h"
#include "sensitivity/rank_order.h"
#include "quant/model_placement.h"
#include "quant/qdq_rewrite.h"

namespace ptqkit {
namespace fs = std::filesystem;
namespace {

using Clock = std::chrono::steady_clock;

std::string DefaultOutputPath(const std::string& input) {
  const fs::path in(input);
  return (in.parent_path() / (in.stem().string() + ".quant.onnx")).string();
}

void CheckOptions(const QuantizeOptions& o, const std::string& output) {
  if (o.onnx_path.empty()) throw Error("--onnx_path is required");
  if (o.quantize_mode != "int8" && o.quantize_mode != "fp8" && o.quantize_mode != "int4") {
    throw Error(fmt::format("unknown --quantize_mode '{}' (expected int8, fp8 or int4)", o.quantize_mode));
  }
  if (o.quantize_mode != "int4" && !o.calibration_method.empty() && IsInt4CalibrationMethod(o.calibration_method)) {
    throw Error(fmt::format("--calibration_method {} applies to --quantize_mode int4 only (int8/fp8 take max, entropy, "
                            "percentile or mse)",
                            o.calibration_method));
  }
  if (o.high_precision_dtype != "fp32" && o.high_precision_dtype != "fp16" && o.high_precision_dtype != "bf16") {
    throw Error(fmt::format("unknown --high_precision_dtype '{}' (expected fp32, fp16 or bf16)", o.high_precision_dtype));
  }
  if (!(o.percentile > 0.0 && o.percentile <= 100.0)) {
    throw Error(fmt::format("--percentile must be in (0, 100], got {}", o.percentile));
  }
  if (o.calibration_batch_size < 0) throw Error("--calibration_batch_size must be positive");
  if (o.intra_op_num_threads < 0) {
    throw Error(fmt::format("--intra_op_num_threads must be 0 (ONNX Runtime's default) or more, got {}",
                            o.intra_op_num_threads));
  }
  if (o.accuracy_budget >= 0) accuracy::ParseBudgetMetric(o.accuracy_budget_metric);  // names a bad metric early
  if (o.accuracy_budget >= 0 && o.quantize_mode == "int4") throw Error("--accuracy_budget applies to int8 and fp8");
  if (!(o.smoothquant_alpha >= 0.0 && o.smoothquant_alpha <= 1.0)) {
    throw Error(fmt::format("--smoothquant_alpha must be in [0, 1] (0 = off), got {}", o.smoothquant_alpha));
  }
  if (o.eval_samples < 0) throw Error(fmt::format("--eval_samples must be >= 0, got {}", o.eval_samples));
  if (o.target_runtime != "trt" && o.target_runtime != "ort_cpu") {
    throw Error(fmt::format("unknown --target_runtime '{}' (expected trt or ort_cpu)", o.target_runtime));
  }
  if (o.reduce_range && o.quantize_mode != "int8") {
    throw Error(fmt::format("--reduce_range applies to --quantize_mode int8 only (got {})", o.quantize_mode));
  }
  for (const auto& ep : o.calibration_eps) CheckExecutionProviderName(ep);
  std::error_code ec;
  const fs::path dir = fs::path(output).parent_path().empty() ? fs::path(".") : fs::path(output).parent_path();
  if (!fs::is_directory(dir, ec)) {
    throw Error(fmt::format("cannot write '{}': folder '{}' does not exist", output, dir.string()), Error::Kind::kIo);
  }
}

// Per-tensor ranges from the calibration statistics of the plan's activation tensors.
std::map<std::string, float> TensorRanges(const ModelPlacement& plan, const calib::CalibrationTable& table,
                                          calib::Method method, double percentile, calib::Grid grid) {
  std::map<std::string, float> amax;
  for (const auto& name : plan.ActivationTensors()) {
    auto it = table.tensors.find(name);
    if (it != table.tensors.end()) amax[name] = calib::ComputeAmax(it->second, method, percentile, grid);
  }
  return amax;
}

// How the options shape the Q/DQ nodes (the run's own rewrite and every budget candidate's).
RewriteOptions RewriteOptionsFor(const QuantizeOptions& o) {
  const bool fp8 = o.quantize_mode == "fp8";
  RewriteOptions rewrite;
  rewrite.dq_only = o.dq_only;
  rewrite.format = fp8 ? QuantFormat::kFloat8E4M3FN : QuantFormat::kInt8;
  rewrite.activation_after_dq = fp8 && o.target_runtime == "ort_cpu";
  rewrite.reduce_range = o.reduce_range;
  return rewrite;
}

// Input-channel means of every Conv the plan may quantize (main graph), for bias correction;
// measured on the FP32 model over the calibration samples (one more forward pass).
std::map<std::string, ConvInputStatistics> ConvInputMeans(const onnx::ModelProto& model, const ModelPlacement& plan,
                                                          const CalibrationData& data, const RuntimeOptions& runtime) {
  std::map<std::string, int> axis;
  const ScopePlacement& main = plan.scopes().front();
  for (const auto& t : ConvInputsToCorrect(*main.index, main.plan)) axis[t] = 1;
  std::map<std::string, ConvInputStatistics> means;
  if (axis.empty()) return means;
  for (const auto& [t, stats] :
       CaptureChannelStatistics(model, data.set, axis, data.batch_size, data.num_batches, runtime)) {
    means[t] = ConvInputStatistics{stats.Mean(), stats.shape};
  }
  return means;
}

// SmoothQuant-style smoothing of the MatMul inputs it can fold (quant/activation_smoothing.h),
// from per-channel maxima measured on the FP32 model (one more forward pass when there are sites).
int SmoothMatMulInputs(onnx::ModelProto* model, const ModelPlacement& plan, const CalibrationData& data,
                       const RuntimeOptions& runtime, double alpha) {
  const ScopePlacement& main = plan.scopes().front();
  const std::vector<SmoothingSite> sites = FindSmoothingSites(*main.index, main.plan);
  if (sites.empty()) return 0;
  std::map<std::string, int> axis;
  for (const auto& s : sites) axis[s.tensor] = -1;
  std::map<std::string, std::vector<float>> amax;
  for (const auto& [t, stats] : CaptureChannelStatistics(*model, data.set, axis, data.batch_size, data.num_batches,
                                                         runtime)) {
    amax[t] = stats.absmax;
  }
  const int n = SmoothActivations(main.scope.graph, *main.index, sites, amax, alpha);
  log::Info("smoothquant (alpha {}): smoothed the input of {} MatMul group(s)", alpha, n);
  return n;
}

// Bias correction (when measured) and then the Q/DQ rewrite.
RewriteStats CorrectAndRewrite(ModelPlacement* plan, const std::map<std::string, float>& amax,
                               const RewriteOptions& rewrite,
                               const std::map<std::string, ConvInputStatistics>& conv_input_means,
                               int* corrected = nullptr) {
  if (!conv_input_means.empty()) {
    const ScopePlacement& main = plan->scopes().front();
    const int n = CorrectConvBiases(main.scope.graph, *main.index, main.plan, conv_input_means, rewrite);
    if (corrected) *corrected = n;
  }
  return plan->Rewrite(amax, rewrite);
}

// The accuracy-budget search (pipeline/accuracy_budget.h): one node sensitivity scan for the
// ranking, then candidates quantized from copies of the FP32 `model` with the same calibration
// table, evaluated on the held-out samples. Returns the nodes to keep in float.
std::vector<std::string> SearchAccuracyBudget(const QuantizeOptions& o, const onnx::ModelProto& model,
                                              const calib::CalibrationTable& table,
                                              const std::vector<std::pair<std::string, std::string>>& drops,
                                              const accuracy::BatchOutputs& reference, CalibrationData& data,
                                              const accuracy::SampleRange& eval_range, const RuntimeOptions& runtime,
                                              const std::vector<std::pair<std::string, std::string>>& quantized_nodes,
                                              const std::map<std::string, ConvInputStatistics>& conv_input_means,
                                              QuantizeReport* report) {
  const accuracy::BudgetMetric metric = accuracy::ParseBudgetMetric(o.accuracy_budget_metric);
  const bool fp8 = o.quantize_mode == "fp8";
  const calib::Method method = calib::ParseMethod(report->calibration_method);
  const calib::Grid grid = fp8 ? calib::Grid::kFp8E4M3 : calib::Grid::kInt8;
  const RewriteOptions rewrite = RewriteOptionsFor(o);
  // With the caller's scorer: the drop of its score from the FP32 model's.
  const double fp32_score = o.accuracy_eval ? o.accuracy_eval(o.onnx_path) : 0.0;
  const auto score_drop = [&](const onnx::ModelProto& candidate) {
    TemporaryFolder folder("ptqkit-budget-");
    const std::string path = folder.path() + "/candidate.onnx";
    onnxio::SaveModel(candidate, path);
    return fp32_score - o.accuracy_eval(path);
  };
  const auto divergence_with = [&](const std::vector<std::string>& in_float) {
    onnx::ModelProto candidate = model;
    PlacementOptions po{o.op_types_to_quantize, o.op_types_to_exclude, o.nodes_to_quantize, o.nodes_to_exclude, fp8};
    po.nodes_to_exclude.insert(po.nodes_to_exclude.end(), in_float.begin(), in_float.end());
    std::set<std::string> matched;  // candidates re-plan silently; the run's own plan warns
    po.matched_selectors = &matched;
    ModelPlacement plan(&candidate, po);
    for (const auto& [tensor, why] : drops) plan.DropTensor(tensor, why);
    CorrectAndRewrite(&plan, plan.Ranges(TensorRanges(plan, table, method, o.percentile, grid)), rewrite,
                      conv_input_means);
    if (o.accuracy_eval) return score_drop(candidate);
    return accuracy::Divergence(metric, reference, accuracy::RunOutputs(candidate, data.set, eval_range, runtime));
  };

  const double at_zero = divergence_with({});
  std::vector<std::string> ranking;
  if (at_zero > o.accuracy_budget) {
    log::Info("accuracy budget: divergence {:.6g} > {:.6g}; ranking nodes with a sensitivity scan", at_zero,
              o.accuracy_budget);
    SensitivityOptions so;
    so.onnx_path = o.onnx_path;
    so.calibration_data_path = o.calibration_data_path;
    if (o.calibration_tensors) so.calibration_tensors = &*o.calibration_tensors;
    so.num_calib_samples = o.num_synthetic_samples;
    so.synthetic_seed = o.synthetic_seed;
    so.granularity = "node";
    so.metric = metric == accuracy::BudgetMetric::kTop1 ? "kl_div" : accuracy::BudgetMetricName(metric);
    so.target_precision = o.quantize_mode;
    so.calibration_method = report->calibration_method;
    so.calibration_shapes = o.calibration_shapes;
    so.calibration_batch_size = o.calibration_batch_size;
    so.calibration_batch_axis = o.calibration_batch_axis;
    so.calibration_eps = o.calibration_eps;
    so.trt_plugins = o.trt_plugins;
    so.intra_op_num_threads = o.intra_op_num_threads;
    // Only what this run quantizes can be kept in float: probe those op types, rank those nodes.
    std::set<std::string> quantized, op_types;
    for (const auto& [node, op] : quantized_nodes) {
      quantized.insert(node);
      op_types.insert(op);
    }
    so.op_types_scope.assign(op_types.begin(), op_types.end());
    for (const auto& [node, score] : sensitivity::RankByScore(ScoreSensitivity(so).scores)) {
      if (quantized.count(node)) ranking.push_back(node);
    }
  }
  AccuracyBudgetReport r = accuracy::SearchCut(static_cast<int64_t>(ranking.size()), o.accuracy_budget, at_zero, [&](int64_t k) {
    return divergence_with(std::vector<std::string>(ranking.begin(), ranking.begin() + k));
  });
  r.metric = o.accuracy_eval ? "accuracy_eval drop" : accuracy::BudgetMetricName(metric);
  r.evaluations += 1;  // the full quantization's
  for (size_t i = 0; i < r.excluded_nodes.size(); ++i) r.excluded_nodes[i] = ranking[i];
  if (!r.met) {
    log::Warn("accuracy budget {} ({}) not met even with all {} ranked node(s) in float (divergence {:.6g}); they stay "
              "in float",
              o.accuracy_budget, r.metric, ranking.size(), r.curve.back().second);
  }
  report->accuracy_budget = r;
  return r.excluded_nodes;
}

}  // namespace

QuantizeReport Quantize(const QuantizeOptions& o) {
  const auto start = Clock::now();
  QuantizeReport report;
  report.output_path = o.output_path.empty() ? DefaultOutputPath(o.onnx_path) : o.output_path;
  CheckOptions(o, report.output_path);
  QuantizeFiles(o, report.output_path).Check();  // again with external data, once the model is read
  if (o.quantize_mode == "int4") return QuantizeInt4(o, std::move(report), start);
  // No method means mse for the activation-calibrated modes (ModelOpt defaults int8 to entropy;
  // mse is never far from max and often better on real models, where entropy can lose a lot).
  report.calibration_method = o.calibration_method.empty() ? "mse" : o.calibration_method;
  const calib::Method method = calib::ParseMethod(report.calibration_method);

  PreparedModel prepared = LoadPreparedModel(o.onnx_path, QuantizeFiles(o, report.output_path));
  onnx::ModelProto& model = prepared.proto;
  report.original_opset = prepared.original_opset;
  const bool fp8 = o.quantize_mode == "fp8";
  if (fp8) onnxio::UpgradeOpset(&model, 19);  // FLOAT8E4M3FN Q/DQ exist from opset 19
  report.output_opset = onnxio::DefaultOpset(model);
  auto plan = std::make_unique<ModelPlacement>(
      &model, PlacementOptions{o.op_types_to_quantize, o.op_types_to_exclude, o.nodes_to_quantize, o.nodes_to_exclude, fp8});

  calib::CalibrationTable table;
  const auto calib_start = Clock::now();
  std::optional<CalibrationData> data;
  EvalSplit split;
  std::vector<std::pair<std::string, std::string>> drops;  // (tensor, why): left in float by every plan
  std::map<std::string, ConvInputStatistics> conv_input_means;  // bias correction; empty: none
  if (!o.calibration_cache.empty()) {
    table = calib::CalibrationTable::Load(o.calibration_cache);
    report.calibration_from_cache = true;
    log::Info("calibration cache: no data to measure channel statistics with, so no bias correction or smoothing");
  } else {
    data = OpenCalibrationData(prepared, CalibrationRequest(o));
    report.synthetic_data = data->synthetic;
    split = SplitForEvaluation(*data, o.eval_samples);
    UseCalibrationSamples(&*data, split);
    // Before calibration: smoothing changes the tensors calibration observes. Not when the
    // statistics are saved: a calibration cache describes the model as given (a run from the cache
    // has no data to smooth with), and a run from it must reproduce the saving run's model.
    if (o.quantize_mode == "int8" && o.smoothquant_alpha > 0 && o.save_calibration_cache.empty()) {
      report.smoothed_matmul_inputs = SmoothMatMulInputs(&model, *plan, *data, Runtime(o), o.smoothquant_alpha);
    }
    CaptureRequest request;
    request.tensors = plan->ActivationTensors();
    request.histograms = method != calib::Method::kMax;
    request.batch_size = data->batch_size;
    request.num_batches = data->num_batches;
    request.progress = o.progress;
    RuntimeOptions runtime = Runtime(o);
    CaptureResult captured = CaptureStatistics(model, data->set, request, runtime);
    for (const auto& t : captured.not_float) drops.emplace_back(t, "input is not a float tensor");
    table = std::move(captured.table);
    for (const auto& [name, stats] : table.tensors) {
      // A tensor that never took a value has no range: a control-flow branch that no calibration
      // sample takes (an If on a sample rate the data does not use). Its nodes stay in float.
      // (A tensor that took only NaN/Inf is an error further on, naming it.)
      if (stats.finite_count() == 0 && stats.nonfinite_count() == 0) {
        log::Warn("tensor '{}' was never computed during calibration (a control-flow branch the data never takes?); "
                  "the nodes reading it stay in float",
                  name);
        drops.emplace_back(name, "its input was never computed during calibration");
      }
    }
    // Not when the statistics are saved, as for smoothing: the cache has no channel means, and a run
    // from it must give the model the saving run gave.
    if (o.bias_correction && o.save_calibration_cache.empty()) {
      conv_input_means = ConvInputMeans(model, *plan, *data, Runtime(o));
    }
    report.execution_providers = captured.providers;
    report.num_calibration_samples = captured.num_samples;
    report.batch_size = request.batch_size;
    for (const auto& [name, stats] : table.tensors) {
      if (stats.nonfinite_count() > 0) {
        log::Warn("tensor '{}': {} NaN/Inf value(s) ignored during calibration", name, stats.nonfinite_count());
      }
    }
  }
  report.calibration_seconds = std::chrono::duration<double>(Clock::now() - calib_start).count();
  // The FP32 outputs the loss report compares with, before the graph is rewritten.
  accuracy::BatchOutputs reference;
  accuracy::SampleRange eval_range;
  if (split.eval_count > 0) {
    eval_range = UseEvaluationSamples(&*data, split);
    reference = accuracy::RunOutputs(model, data->set, eval_range, Runtime(o));
  }

  for (const auto& [tensor, why] : drops) plan->DropTensor(tensor, why);
  const calib::Grid grid = fp8 ? calib::Grid::kFp8E4M3 : calib::Grid::kInt8;
  const RewriteOptions rewrite = RewriteOptionsFor(o);
  RuntimeOptions eval_runtime = Runtime(o);
  // The report judges the Q/DQ graph as written (fake-quant): ONNX Runtime's default level fuses
  // it into kernels whose numerics depend on its version (1.30, bundled here, cannot even load
  // FP8 Q/DQ models at that level; 1.32 can). tests/corpus checks the default level separately.
  eval_runtime.basic_optimizations_only = true;

  std::vector<std::string> budget_exclusions;
  if (o.accuracy_budget >= 0) {
    if (!data || (split.eval_count == 0 && !o.accuracy_eval)) {
      throw Error("--accuracy_budget needs calibration data (not a --calibration_cache: the ranking scan calibrates) "
                  "and held-out samples (--eval_samples > 0) or, in Python, an accuracy_eval scorer");
    }
    budget_exclusions = SearchAccuracyBudget(o, model, table, drops, reference, *data, eval_range, eval_runtime,
                                             plan->QuantizedNodes(), conv_input_means, &report);
    if (!budget_exclusions.empty()) {
      // The final plan keeps the search's choice in float too.
      PlacementOptions po{o.op_types_to_quantize, o.op_types_to_exclude, o.nodes_to_quantize, o.nodes_to_exclude, fp8};
      po.nodes_to_exclude.insert(po.nodes_to_exclude.end(), budget_exclusions.begin(), budget_exclusions.end());
      plan = std::make_unique<ModelPlacement>(&model, po);
      for (const auto& [tensor, why] : drops) plan->DropTensor(tensor, why);
    }
  }

  const std::map<std::string, float> amax = plan->Ranges(TensorRanges(*plan, table, method, o.percentile, grid));
  report.quantized_by_op_type = plan->QuantizedByOpType();
  report.left_in_float = plan->LeftInFloat();
  for (auto& [node, why] : report.left_in_float) {
    if (std::find(budget_exclusions.begin(), budget_exclusions.end(), node) != budget_exclusions.end()) {
      why = "kept in float by --accuracy_budget";
    }
  }
  const RewriteStats stats = CorrectAndRewrite(plan.get(), amax, rewrite, conv_input_means, &report.bias_corrected_convs);
  report.qdq_pairs = stats.qdq_pairs;
  const bool user_excluded = !o.nodes_to_exclude.empty() || !o.op_types_to_exclude.empty() || !budget_exclusions.empty();
  if (stats.qdq_pairs == 0 && user_excluded) {
    log::Warn("every quantization candidate was excluded: the output has no Q/DQ node");
  } else if (stats.qdq_pairs == 0) {
    // Writing the FP32 model under a quantized name would hide that nothing was done.
    std::string why;
    for (size_t k = 0; k < std::min<size_t>(3, report.left_in_float.size()); ++k) {
      why += fmt::format("; '{}' {}", report.left_in_float[k].first, report.left_in_float[k].second);
    }
    throw Error(fmt::format("no node of '{}' was quantized ({} candidate(s) left in float{}); nothing was written. "
                            "Choose nodes with --op_types_to_quantize or --nodes_to_quantize",
                            o.onnx_path, report.left_in_float.size(), why),
                Error::Kind::kUnsupported);
  }
  ConvertPrecision(&model, o, &report);
  if (split.eval_count > 0) {
    report.loss = MeasureLoss(reference, model, *data, eval_range, split.held_out, eval_runtime, table, amax, grid);
    if (report.accuracy_budget.used && report.accuracy_budget.met) report.loss.warning.clear();
    if (!report.loss.warning.empty()) log::Warn("{}", report.loss.warning);
  } else {
    report.loss.not_evaluated_because = o.eval_samples <= 0 ? "--eval_samples 0"
                                        : report.calibration_from_cache ? "the ranges came from a calibration cache"
                                                                        : "no calibration samples";
  }
  report.total_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  CheckAndSave(&model, o, report);
  // After the model: a save that fails leaves no calibration cache behind.
  if (!o.save_calibration_cache.empty()) table.Save(o.save_calibration_cache);
  report.total_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return report;
}

}  // namespace ptqkit
