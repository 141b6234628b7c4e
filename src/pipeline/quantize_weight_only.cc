#include "pipeline/quantize_weight_only.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <thread>

#include "base/log.h"
#include "onnx/float16.h"
#include "onnx/graph_index.h"
#include "onnx/model_io.h"
#include "onnx/model_prep.h"
#include "onnx/onnx_library.h"
#include "accuracy/output_agreement.h"
#include "pipeline/canonical_check.h"
#include "pipeline/gram_capture.h"
#include "pipeline/candidate_models.h"
#include "pipeline/loss_measurement.h"
#include "pipeline/mixed_precision_search.h"
#include "pipeline/model_output.h"
#include "pipeline/model_options.h"
#include "runtime/prepared_model.h"
#include "ptqkit/error.h"
#include "quant/blocked_weight_search.h"
#include "quant/dynamic_block_activation.h"
#include "quant/ort_block_containers.h"
#include "quant/placement.h"
#include "quant/qdq_rewrite.h"
#include "quant/selectors.h"
#include "runtime/session.h"

namespace ptqkit {
namespace {

using Clock = std::chrono::steady_clock;

std::string ResolveMethod(const QuantizeOptions& o, const BlockCodec& codec) {
  const std::string m = o.calibration_method.empty() ? codec.default_method : o.calibration_method;
  if (m != "rtn" && m != "awq_clip" && m != "awq_lite") {
    throw Error(fmt::format("--calibration_method {} does not apply to --quantize_mode {} (expected rtn, awq_clip "
                            "or awq_lite; max, entropy and percentile calibrate int8/fp8 activations)",
                            m, o.quantize_mode));
  }
  return m;
}

// The block length along K: fixed by nvfp4 (16) and mxfp8 (32), --block_size for int4.
int64_t BlockSize(const QuantizeOptions& o, const BlockCodec& codec) {
  return codec.fixed_block_size > 0 ? codec.fixed_block_size : o.block_size;
}

void CheckWeightOnlyOptions(const QuantizeOptions& o, const QuantFormat& format) {
  const BlockCodec& codec = *format.block_codec;
  if (codec.fixed_block_size > 0 && o.block_size != QuantizeOptions().block_size &&
      o.block_size != codec.fixed_block_size) {
    throw Error(fmt::format("--block_size {} does not apply to --quantize_mode {}: its blocks are {} weights by "
                            "definition",
                            o.block_size, format.name, codec.fixed_block_size));
  }
  if (!o.mixed_precision.empty() && o.mixed_precision != "int4,int8") {
    throw Error(fmt::format("unknown --mixed_precision '{}' (expected int4,int8)", o.mixed_precision));
  }
  if (o.use_zero_point && !codec.zero_points) {
    throw Error(fmt::format("--use_zero_point applies to --quantize_mode int4 only ({} values are symmetric)",
                            format.name));
  }
  if (o.block_size == 0 || o.block_size < -1) {
    throw Error(fmt::format("--block_size must be a positive number of elements or -1 (one block per output "
                            "channel), got {}",
                            o.block_size));
  }
  if (!(o.awqclip_alpha_min > 0.0 && o.awqclip_alpha_min <= 1.0)) {
    throw Error(fmt::format("--awqclip_alpha_min must be in (0, 1], got {}", o.awqclip_alpha_min));
  }
  if (!(o.awqclip_alpha_step > 0.0 && o.awqclip_alpha_step <= 1.0)) {
    throw Error(fmt::format("--awqclip_alpha_step must be in (0, 1], got {}", o.awqclip_alpha_step));
  }
  if (!o.calibration_cache.empty() || !o.save_calibration_cache.empty()) {
    throw Error(fmt::format("--calibration_cache / --save_calibration_cache hold activation ranges of int8/fp8 "
                            "calibration; --quantize_mode {} has none (its AWQ statistics are not cached)",
                            format.name));
  }
  if (o.quantize_activations && codec.trt_dynamic_quantize == nullptr) {
    const auto with_activations = FormatNamesWhere([](const QuantFormat& f) {
      return f.block_codec != nullptr && f.block_codec->trt_dynamic_quantize != nullptr;
    });
    throw Error(fmt::format("--quantize_activations applies to --quantize_mode {} (TensorRT quantizes their "
                            "activations in blocks at run time); {} is weight-only",
                            fmt::join(with_activations, " and "), format.name));
  }
  if (o.quantize_activations && o.high_precision_dtype != "fp32") {
    throw Error(fmt::format("--quantize_activations writes float32 block-scaling chains; --high_precision_dtype {} is "
                            "not supported with it yet",
                            o.high_precision_dtype));
  }
  if (o.dq_only) {
    log::Info("--dq_only: {} weights are always stored quantized with DequantizeLinear only", format.name);
  }
}

[[noreturn]] void NoTargets(const std::string& path, const QuantFormat& format, const GraphIndex& index,
                            const Placement& plan) {
  if (plan.float_reasons.empty()) {
    throw Error(fmt::format("'{}' has no MatMul or Gemm node: --quantize_mode {} quantizes only their weights", path,
                            format.name));
  }
  std::string reasons;
  const size_t shown = std::min<size_t>(plan.float_reasons.size(), 3);
  size_t i = 0;
  for (const auto& [node, why] : plan.float_reasons) {
    if (i == shown) break;
    reasons += fmt::format("{}'{}': {}", i++ ? "; " : "", index.node(node).name(), why);
  }
  if (plan.float_reasons.size() > shown) reasons += fmt::format("; and {} more", plan.float_reasons.size() - shown);
  throw Error(fmt::format("'{}' has no MatMul/Gemm whose weight --quantize_mode {} can quantize ({})", path,
                          format.name, reasons));
}

// Where the output goes: the block length, and nvfp4/mxfp8's ONNX Runtime containers
// (block_codec.h) with the opset and IR version they need.
struct OutputForm {
  int64_t block_size = 0;
  bool ort_containers = false;
  int64_t min_opset = 0;
  int64_t min_ir_version = 0;
};

OutputForm OutputFormFor(const QuantizeOptions& o, const QuantFormat& format) {
  const BlockCodec& codec = *format.block_codec;
  OutputForm f;
  f.block_size = BlockSize(o, codec);
  f.ort_containers = FindRuntimeForm(o.target_runtime).ort_block_containers && codec.ort_cpu_min_opset > 0;
  f.min_opset = f.ort_containers ? codec.ort_cpu_min_opset : format.min_opset;
  f.min_ir_version = f.ort_containers ? 10 : format.min_ir_version;  // IR 10: opset 21
  return f;
}

// The model at the opset the output needs (blocked DequantizeLinear: 21; the element types: more),
// with the user's model options applied.
void UpgradeModel(const QuantizeOptions& o, const OutputForm& form, PreparedModel* prepared, CanonicalForm* canonical,
                  QuantizeReport* report) {
  onnx::ModelProto& model = prepared->proto;
  report->original_opset = prepared->original_opset;
  onnxio::UpgradeOpset(&model, form.min_opset);
  if (model.ir_version() < form.min_ir_version) model.set_ir_version(form.min_ir_version);
  ApplyModelOptions(o, form.min_opset, prepared, canonical);
  report->output_opset = onnxio::DefaultOpset(model);
}

// The MatMul/Gemm weights to quantize: the format's weight-only placement profile with the user's
// selectors, reported with the nodes left in float.
Placement PlanTargets(const QuantizeOptions& o, const QuantFormat& format, const GraphIndex& index,
                      QuantizeReport* report) {
  PlacementOptions options;
  options.op_types_to_quantize = o.op_types_to_quantize;
  options.op_types_to_exclude = o.op_types_to_exclude;
  options.nodes_to_quantize = o.nodes_to_quantize;
  options.nodes_to_exclude = o.nodes_to_exclude;
  options.format = &format;
  options.quantize_activations = o.quantize_activations;
  Placement plan = PlanPlacement(index, options);
  if (plan.tensors.empty()) NoTargets(o.onnx_path, format, index, plan);
  for (int node : plan.quantized_nodes) ++report->quantized_by_op_type[index.node(node).op_type()];
  for (const auto& [node, why] : plan.float_reasons) report->left_in_float.emplace_back(index.node(node).name(), why);
  return plan;
}

// --mixed_precision int4,int8: the weights of --int8_nodes' nodes among the planned ones.
std::set<std::string> Int8NodeWeights(const QuantizeOptions& o, const GraphIndex& index, const Placement& plan) {
  std::set<std::string> weights;
  if (o.int8_nodes.empty()) return weights;
  const NodeSelector selected(index, o.int8_nodes, {}, "--int8_nodes", "");
  for (const auto& q : plan.tensors) {
    for (const auto& use : q.uses) {
      if (selected.Selects(use.node)) weights.insert(q.tensor);
    }
  }
  return weights;
}

RewriteOptions RewriteOptionsFor(const QuantizeOptions& o, const QuantFormat& format, const std::string& method,
                                 const OutputForm& form, const GraphIndex& index, const Placement& plan) {
  RewriteOptions r;
  r.format = &format;
  BlockedWeightSearch& w = r.blocked.weight;
  w.block_size = form.block_size;
  w.zero_point = o.use_zero_point;
  w.alpha_min = o.awqclip_alpha_min;
  w.alpha_step = o.awqclip_alpha_step;
  w.threads = o.intra_op_num_threads > 0 ? o.intra_op_num_threads
                                         : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  w.awq_lite = method == "awq_lite";
  r.blocked.trt_activations = !form.ort_containers;
  if (!o.mixed_precision.empty() || !o.int8_nodes.empty()) {
    r.blocked.high_format = &Int8WeightOnlyFormat();
    r.blocked.high_weights = Int8NodeWeights(o, index, plan);
  }
  return r;
}

// What the calibration data gives: the Grams (awq_clip, awq_lite) and the FP32 outputs on the
// held-out samples (the loss report, the mixed-precision search).
struct WeightOnlyData {
  std::optional<CalibrationData> data;  // none: rtn without --calibration_data_path
  std::optional<GramCapture> capture;
  EvalSplit split;
  accuracy::SampleRange range;
  accuracy::BatchOutputs reference;
  double reference_seconds = 0.0;
};

// awq_clip and awq_lite: Grams (and channel magnitudes) from one pass over the calibration samples.
// rtn reads data only when given some, for the loss report. Held-out samples calibrate nothing.
// nvfp4's dynamic-block activations need a calibrated amax each (their global scale).
bool NeedsActivationRanges(const Placement& plan, const QuantFormat& format) {
  if (format.block_codec->scale_code != BlockScaleCode::kE4M3TimesGlobal) return false;
  return std::any_of(plan.tensors.begin(), plan.tensors.end(),
                     [](const QuantizedTensor& q) { return q.dynamic_blocks; });
}

void ReadCalibrationData(const QuantizeOptions& o, const QuantFormat& format, const std::string& method,
                         const PreparedModel& prepared,
                         const GraphIndex& index, const Placement& plan, int64_t block_size, CanonicalForm* canonical,
                         WeightOnlyData* d, RewriteOptions* rewrite, QuantizeReport* report) {
  const onnx::ModelProto& model = prepared.proto;
  const auto start = Clock::now();
  const bool grams = method != "rtn";
  const bool capture = grams || NeedsActivationRanges(plan, format);
  if (capture || !o.calibration_data_path.empty()) {
    d->data.emplace(OpenCalibrationData(prepared, CalibrationRequest(o)));
    CalibrationData& data = *d->data;
    CompareCanonicalForm(canonical, model, &data, Runtime(o), report);
    report->synthetic_data = data.synthetic;
    report->batch_size = data.batch_size;
    d->split = SplitForEvaluation(data, o.eval_samples);
    UseCalibrationSamples(&data, d->split);
    const RuntimeOptions runtime = Runtime(o);
    if (capture) {
      d->capture.emplace(model, index, plan, block_size, grams);
      report->num_calibration_samples = d->capture->Run(data, runtime, o.progress, &report->execution_providers);
      if (grams) rewrite->blocked.grams = &d->capture->grams();
    }
    if (!d->split.evaluated.empty()) {
      const auto reference_start = Clock::now();
      d->range = UseEvaluationSamples(&data, d->split, o.eval_mask_input);
      d->reference = accuracy::RunOutputs(model, data.set, d->range, runtime);
      d->reference_seconds = std::chrono::duration<double>(Clock::now() - reference_start).count();
    }
  }
  CompareCanonicalForm(canonical, model, nullptr, Runtime(o), report);  // rtn: counts only
  report->calibration_seconds = std::chrono::duration<double>(Clock::now() - start).count();
}

// The calibrated amax of each dynamic-block activation (none when nothing was captured: mxfp8's
// activations need none).
std::map<std::string, float> ActivationRanges(const WeightOnlyData& d) {
  return d.capture ? d.capture->amax() : std::map<std::string, float>{};
}

// --accuracy_budget with --mixed_precision int4,int8: the INT8 weights (pipeline/mixed_precision_search.h).
void ChooseInt8Weights(const QuantizeOptions& o, const onnx::ModelProto& model, const Placement& plan,
                       WeightOnlyData& d, std::map<std::string, BlockedWeight>* cache, RewriteOptions* rewrite,
                       QuantizeReport* report) {
  if (!d.data || d.split.evaluated.empty()) {
    throw Error("--accuracy_budget needs calibration data (--calibration_data_path) and held-out samples "
                "(--eval_samples > 0)");
  }
  RuntimeOptions runtime = Runtime(o);
  runtime.basic_optimizations_only = true;  // as the loss report judges the file
  CandidateScorer scorer(o, d.reference, *d.data, d.range, runtime);
  rewrite->blocked.cache = cache;
  rewrite->blocked.high_weights = SearchInt8Weights(o, model, plan, *rewrite, scorer, report);
}

// Each quantized node's weight format, in graph order.
void ReportWeightPrecision(const QuantFormat& format, const GraphIndex& index, const Placement& plan,
                           const RewriteOptions& rewrite, QuantizeReport* report) {
  std::map<int, bool> int8_by_node;
  for (const auto& q : plan.tensors) {
    for (const auto& use : q.uses) int8_by_node[use.node] = rewrite.blocked.high_weights.count(q.tensor) > 0;
  }
  for (const auto& [node, int8] : int8_by_node) {
    report->weight_precision.emplace_back(index.node(node).name(), int8 ? "int8" : std::string(format.name));
  }
}

void LogRewrite(const QuantFormat& format, const std::string& method, const RewriteOptions& rewrite,
                const RewriteStats& stats) {
  if (stats.dynamic_activations > 0) {
    log::Info("{}: {} activation(s) quantized in blocks scaled at run time ({})", format.name,
              stats.dynamic_activations,
              rewrite.blocked.trt_activations ? "TensorRT's dynamic quantizer ops; the loss report runs their "
                                                "standard-operator twin"
                                              : "standard operators ONNX Runtime runs");
  }
  if (rewrite.blocked.high_format != nullptr) {
    log::Info("mixed precision: {} of {} weight(s) stored as INT8", stats.high_weights, stats.weight_tensors);
  }
  if (method == "awq_lite") {
    log::Info("{}: {} weight(s), {} block(s), {} scaled by awq_lite ({} Mul node(s) on their activations)",
              format.name, stats.weight_tensors, stats.blocks, stats.scaled_weights, stats.scale_muls);
  } else {
    log::Info("{} {}: {} weight(s), {} block(s), {} clipped", format.name, method, stats.weight_tensors, stats.blocks,
              stats.clipped_blocks);
  }
}

// The loss report on the held-out samples (ONNX Runtime's basic level: the blocked DequantizeLinear
// as written; its default level fuses INT4 ones into MatMulNBits, which quantizes the activations
// to int8 unless told otherwise). The standard nvfp4/mxfp8 containers run as their ONNX Runtime
// twins: the dequantized weights are the same bits.
void ReportLoss(const QuantizeOptions& o, const onnx::ModelProto& model, const WeightOnlyData& d,
                QuantizeReport* report) {
  if (!d.data) {
    report->loss.not_evaluated_because = "rtn read no data; give --calibration_data_path";
    return;
  }
  if (d.split.evaluated.empty()) {
    report->loss.not_evaluated_because = o.eval_samples <= 0 ? "--eval_samples 0" : "no calibration samples";
    return;
  }
  const auto start = Clock::now();
  RuntimeOptions runtime = Runtime(o);
  runtime.basic_optimizations_only = true;
  const onnx::ModelProto* runnable = &model;
  std::optional<onnx::ModelProto> twin;
  if (HasStandardBlockContainers(model.graph()) || HasTrtDynamicQuantize(model.graph())) {
    twin.emplace(model);
    UseOrtCpuContainers(twin->mutable_graph());
    EmulateTrtDynamicQuantize(&*twin);
    runnable = &*twin;
  }
  report->loss = MeasureLoss(d.reference, *runnable, *d.data, d.range, d.split.held_out, runtime, {}, {}, {},
                             "Keep the most sensitive MatMul/Gemm weights in float (--nodes_to_exclude) or use "
                             "--calibration_method awq_lite.");
  report->loss.sample_indices = d.split.evaluated;
  report->loss.seconds = d.reference_seconds + std::chrono::duration<double>(Clock::now() - start).count();
  if (report->accuracy_budget.used && report->accuracy_budget.met) report->loss.warning.clear();  // as asked
  if (!report->loss.warning.empty()) log::Warn("{}", report->loss.warning);
}

}  // namespace

bool IsWeightOnlyCalibrationMethod(const std::string& m) {
  return m.empty() || m == "rtn" || m == "awq_clip" || m == "awq_lite";
}

QuantizeReport QuantizeWeightOnly(const QuantizeOptions& o, const QuantFormat& format, QuantizeReport report,
                            Clock::time_point start) {
  const std::string method = ResolveMethod(o, *format.block_codec);
  CheckWeightOnlyOptions(o, format);
  report.calibration_method = method;
  const OutputForm form = OutputFormFor(o, format);
  PreparedModel prepared = LoadPreparedModel(o.onnx_path, QuantizeFiles(o, report.output_path));
  CanonicalForm canonical;
  UpgradeModel(o, form, &prepared, &canonical, &report);
  onnx::ModelProto& model = prepared.proto;

  const GraphIndex index(model.graph());
  const Placement plan = PlanTargets(o, format, index, &report);
  RewriteOptions rewrite = RewriteOptionsFor(o, format, method, form, index, plan);
  WeightOnlyData data;
  ReadCalibrationData(o, format, method, prepared, index, plan, form.block_size, &canonical, &data, &rewrite, &report);
  std::map<std::string, BlockedWeight> quantized_weights;  // the budget's candidates quantize each weight once
  if (o.accuracy_budget >= 0) ChooseInt8Weights(o, model, plan, data, &quantized_weights, &rewrite, &report);
  ReportWeightPrecision(format, index, plan, rewrite, &report);

  const RewriteStats stats = InsertQdq(&model, plan, ActivationRanges(data), rewrite);
  report.dynamic_block_activations = stats.dynamic_activations;
  if (form.ort_containers) UseOrtCpuContainers(model.mutable_graph());  // same values, runnable containers
  quantized_weights.clear();
  data.capture.reset();  // the Grams are not needed any more
  report.qdq_pairs = stats.qdq_pairs;
  LogRewrite(format, method, rewrite, stats);
  ConvertPrecision(&model, o, &report);
  StagedOutput output(&model, o, report.output_path);  // written, not yet visible
  ReportLoss(o, model, data, &report);
  report.total_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  output.Commit(o, report);
  return report;
}

}  // namespace ptqkit
