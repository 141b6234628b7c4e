#include "ptqkit/quantize.h"

#include <fmt/format.h>

#include <algorithm>
#include <fmt/ranges.h>

#include <filesystem>

#include "autotune/presets.h"
#include "base/atomic_file.h"
#include "base/log.h"
#include "calib/trt_calibration_cache.h"
#include "onnx/model_prep.h"
#include "onnx/onnx_library.h"
#include "pipeline/canonical_check.h"
#include "pipeline/format_choice.h"
#include "pipeline/model_output.h"
#include "pipeline/quantize_run.h"
#include "ptqkit/calibration.h"
#include "ptqkit/error.h"
#include "quant/rewrite/dynamic_block_activation.h"
#include "quant/rewrite/ort_block_containers.h"
#include "quant/rewrite/ort_bias_overflow.h"
#include "quant/placement/runtime_forms.h"
#include "quant/rewrite/weight_qdq_fold.h"
#include "accuracy/padding_mask_input.h"

namespace ptqkit {
namespace fs = std::filesystem;
namespace {

using Clock = QuantizeClock;

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

// --mixed_precision int8,fp8: a pair with the run's format, on a runtime that has FP8.
void CheckMixedActivationFormats(const QuantizeOptions& o, const QuantFormat& format) {
  SecondActivationFormat(o.mixed_precision, format.name);  // names a bad pair
  const RuntimeForm& form = EffectiveRuntimeForm(o.target_runtime, format);
  if (form.name != "trt") {
    throw Error(fmt::format("--mixed_precision {} needs --target_runtime trt: --target_runtime {} has no FP8 kernels",
                            o.mixed_precision, o.target_runtime));
  }
  if (o.weight_rounding == "gptq") {
    throw Error(fmt::format("--weight_rounding gptq does not combine with --mixed_precision {} yet (its codes are "
                            "chosen in one format)",
                            o.mixed_precision));
  }
}

// Every mode's option checks, then the weight-only formats' own.
void CheckOptions(const QuantizeOptions& o, const std::string& output) {
  if (o.onnx_path.empty()) throw Error("--onnx_path is required");
  const QuantFormat& format = FindFormat(o.quantize_mode, "--quantize_mode");
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
  if (!o.int8_nodes.empty() && format.name != "int4") {
    throw Error(fmt::format("--int8_nodes applies to --quantize_mode int4 (got {})", format.name));
  }
  if (!o.mixed_precision.empty() && !format.placement.weight_only) CheckMixedActivationFormats(o, format);
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
  if (format.placement.weight_only) CheckWeightOnlyOptions(o, format);
  std::error_code ec;
  const fs::path dir = fs::path(output).parent_path().empty() ? fs::path(".") : fs::path(output).parent_path();
  if (!fs::is_directory(dir, ec)) {
    throw Error(fmt::format("cannot write '{}': folder '{}' does not exist", output, dir.string()), Error::Kind::kIo);
  }
}

// The model loaded, raised to the opset (and IR version) the output needs, and the user's model
// options applied (simplify, shapes, canonicalization).
void LoadModel(QuantizeRun& run) {
  const QuantizeOptions& o = run.o;
  run.prepared = LoadPreparedModel(o.onnx_path, QuantizeFiles(o, run.report.output_path));
  onnx::ModelProto& model = run.prepared.proto;
  run.report.original_opset = run.prepared.original_opset;
  int64_t min_opset = run.format.min_opset, min_ir_version = run.format.min_ir_version;
  if (run.weight_only) WeightOnlyOutputVersion(run, &min_opset, &min_ir_version);
  if (run.second_format != nullptr) {  // one graph holds both formats' Q/DQ
    min_opset = std::max(min_opset, run.second_format->min_opset);
    min_ir_version = std::max(min_ir_version, run.second_format->min_ir_version);
  }
  onnxio::UpgradeOpset(&model, min_opset);  // e.g. FP8 Q/DQ without zero points: opset 21
  if (model.ir_version() < min_ir_version) model.set_ir_version(min_ir_version);
  ApplyModelOptions(o, min_opset, &run.prepared, &run.canonical);
  run.report.output_opset = onnxio::DefaultOpset(model);
}

// What is quantized: activations and weights (int8/fp8), or weights alone.
void Plan(QuantizeRun& run) {
  if (run.weight_only) {
    PlanWeights(run);
  } else {
    PlanActivations(run);
  }
}

// The data, once: opened, samples held out for the loss report (the rest calibrate), the canonical
// form compared with the model as given on a few calibration samples.
void OpenData(QuantizeRun& run) {
  run.data.emplace(OpenCalibrationData(run.prepared, CalibrationRequest(run.o)));
  CalibrationData& data = *run.data;
  run.report.synthetic_data = data.synthetic;
  run.report.batch_size = data.batch_size;
  run.split = SplitForEvaluation(data, run.o.eval_samples);
  UseCalibrationSamples(&data, run.split);
  CompareCanonicalForm(&run.canonical, run.prepared.proto, &data, Runtime(run.o), &run.report);
}

// The calibration pass over the data: activation statistics (or ranges from a cache, with no data),
// or the weight-only formats' Grams.
void Calibrate(QuantizeRun& run) {
  const auto start = Clock::now();
  if (run.weight_only) {
    if (WeightOnlyReadsData(run)) {
      OpenData(run);
      CaptureWeightGrams(run);
    }
  } else {
    if (ActivationRangesFromData(run)) OpenData(run);
    CalibrateActivationRanges(run);
  }
  CompareCanonicalForm(&run.canonical, run.prepared.proto, nullptr, Runtime(run.o), &run.report);  // counts
  run.report.calibration_seconds = std::chrono::duration<double>(Clock::now() - start).count();
}

// The FP32 outputs on the held-out samples, before the graph is rewritten: what the loss report,
// the budget and autotune compare with. The report judges the Q/DQ graph as written (fake-quant):
// ONNX Runtime's default level fuses it into kernels whose numerics depend on its version (1.30,
// bundled here, cannot even load FP8 Q/DQ models at that level; 1.32 can; tests/corpus checks the
// default level separately). Except for a form written for ONNX Runtime's fused integer kernels:
// its users run them, at the default level, and that is what the report must measure.
void ReferenceOutputs(QuantizeRun& run) {
  run.eval_runtime = Runtime(run.o);
  const RuntimeForm& form = EffectiveRuntimeForm(run.o.target_runtime, run.format);
  run.eval_runtime.basic_optimizations_only = !form.quantize_op_outputs;
  if (!run.data || run.split.evaluated.empty()) return;
  const auto start = Clock::now();
  run.range = UseEvaluationSamples(&*run.data, run.split,
                                   accuracy::PaddingMaskInput(run.prepared.proto.graph(), run.o.eval_mask_input));
  run.reference = accuracy::RunOutputs(run.prepared.proto, run.data->set, run.range, Runtime(run.o));
  run.reference_seconds = std::chrono::duration<double>(Clock::now() - start).count();
}

// The searches under --accuracy_budget (nodes kept in float, or INT8 weights) and --autotune.
void Search(QuantizeRun& run) {
  if (run.weight_only) {
    ChooseInt8Weights(run);
  } else {
    SearchActivationPlacements(run);
  }
}

void RoundWeights(QuantizeRun& run) {
  if (!run.weight_only) RoundActivationFormatWeights(run);  // weight-only formats search theirs in the rewrite
}

// The Q/DQ written into the model.
void Rewrite(QuantizeRun& run) {
  if (run.weight_only) {
    RewriteWeights(run);
  } else {
    RewriteActivations(run);
  }
  run.report.qdq_pairs = run.stats.qdq_pairs;
}

// The loss report on the held-out samples, or why there is none. The model is already written
// (StagedOutput): each weight's Q/DQ may now be folded into the weight in place (on a model whose
// weights ONNX Runtime gets as inputs it would otherwise quantize every weight again at every run,
// one element at a time along a MatMul weight's last axis; same bits, no second copy). nvfp4/mxfp8's
// standard containers and TensorRT's dynamic block quantizers run as their ONNX Runtime twins: the
// dequantized weights are the same bits.
void ReportLoss(QuantizeRun& run) {
  const QuantizeOptions& o = run.o;
  QuantizeReport& report = run.report;
  if (run.split.evaluated.empty()) {
    report.loss.not_evaluated_because =
        run.weight_only && !run.data ? "rtn read no data; give --calibration_data_path"
        : o.eval_samples <= 0        ? "--eval_samples 0"
        : report.calibration_from_cache ? "the ranges came from a calibration cache"
                                        : "no calibration samples";
    return;
  }
  const auto start = Clock::now();
  onnx::ModelProto& model = run.prepared.proto;
  const onnx::ModelProto* runnable = &model;
  std::optional<onnx::ModelProto> twin;
  if (!run.weight_only) {
    FoldWeightQdqForSession(&model);
  } else if (HasStandardBlockContainers(model.graph()) || HasTrtDynamicQuantize(model.graph())) {
    twin.emplace(model);
    UseOrtCpuContainers(twin->mutable_graph());
    EmulateTrtDynamicQuantize(&*twin);
    runnable = &*twin;
  }
  const std::string advice = run.weight_only ? "Keep the most sensitive MatMul/Gemm weights in float "
                                               "(--nodes_to_exclude) or use --calibration_method awq_lite."
                                             : "";
  report.loss = MeasureLoss(run.reference, *runnable, *run.data, run.range, run.split.held_out, run.eval_runtime,
                            run.table, run.amax, run.weight_only ? calib::Grid{} : run.format.grid, advice);
  report.loss.sample_indices = run.split.evaluated;
  report.loss.seconds = run.reference_seconds + std::chrono::duration<double>(Clock::now() - start).count();
  if (report.accuracy_budget.used && report.accuracy_budget.met) report.loss.warning.clear();  // as asked
  if (!report.loss.warning.empty()) log::Warn("{}", report.loss.warning);
}

// --save_calibration_cache (ptqkit's table) and --save_calibration_cache_path (TensorRT's scales),
// after the model: a save that fails leaves no cache behind.
void SaveCalibrationCaches(const QuantizeOptions& o, const calib::CalibrationTable& table,
                           const std::map<std::string, float>& amax, const QuantFormat& format) {
  if (!o.save_calibration_cache.empty()) table.Save(o.save_calibration_cache);
  if (o.save_calibration_cache_path.empty()) return;
  std::map<std::string, float> scales;
  for (const auto& [tensor, a] : amax) scales[tensor] = a / format.qmax;
  WriteFileAtomically(o.save_calibration_cache_path, calib::TrtCalibrationCacheText(scales));
}

// Precision conversion, the file staged (written, not visible), the loss report (which may fold the
// weights in place), the commit, then the calibration caches.
void WriteModel(QuantizeRun& run) {
  onnx::ModelProto& model = run.prepared.proto;
  ConvertPrecision(&model, run.o, &run.report);
  if (!run.weight_only) run.report.ort_fp16_bias_overflows = CountFp16BiasOverflows(model.graph());
  StagedOutput output(&model, run.o, run.report.output_path);
  ReportLoss(run);
  run.report.total_seconds = run.Elapsed();
  output.Commit(run.o, run.report);
  SaveCalibrationCaches(run.o, run.table, run.amax, run.format);
  run.report.total_seconds = run.Elapsed();
}

}  // namespace

QuantizeRun::QuantizeRun(const QuantizeOptions& options, const QuantFormat& f)
    : o(options), format(f), weight_only(f.placement.weight_only), start(QuantizeClock::now()) {
  if (!weight_only && !o.mixed_precision.empty()) {
    second_format = &FindFormat(SecondActivationFormat(o.mixed_precision, f.name), "--mixed_precision");
  }
}

double QuantizeRun::Elapsed() const { return std::chrono::duration<double>(QuantizeClock::now() - start).count(); }

// Every mode runs these steps, in this order (quantize_run.h says where the weight-only formats differ).
QuantizeReport Quantize(const QuantizeOptions& o) {
  const std::string output_path = o.output_path.empty() ? DefaultOutputPath(o.onnx_path) : o.output_path;
  CheckOptions(o, output_path);
  QuantizeFiles(o, output_path).Check();  // again with external data, once the model is read
  QuantizeRun run(o, FindFormat(o.quantize_mode, "--quantize_mode"));
  run.report.output_path = output_path;
  run.method = ResolveCalibrationMethod(run.format, o.calibration_method);
  run.report.calibration_method = run.method;
  LoadModel(run);
  Plan(run);
  Calibrate(run);
  ReferenceOutputs(run);
  Search(run);
  RoundWeights(run);
  Rewrite(run);
  WriteModel(run);
  return run.report;
}

}  // namespace ptqkit
