// The steps of Quantize() that are particular to the weight-only formats (int4, nvfp4, mxfp8,
// mxfp4): MatMul/Gemm weights quantized in blocks along K, each format's encoding from its row's
// block codec (quant/formats/block_codec.h), chosen by the weight-only search (quant/formats/blocked_weight_search.h);
// the Q/DQ writer is the one int8/fp8 use (quant/rewrite/qdq_rewrite.h). What differs is what calibration
// measures (pipeline/gram_capture.h: one streaming pass of ONNX Runtime that folds every planned
// weight's activation input into its block Gram matrices and per-channel sums of |x|; memory
// K x (block_size + 1) doubles per activation, whatever the number of samples; it also records the
// amax of nvfp4's dynamic-block activations) and what the budget chooses (INT8 weights, not float
// nodes: pipeline/mixed_precision_search.h). `rtn` reads data only for the loss report (and
// nvfp4's activation ranges). Output opsets: blocked DequantizeLinear 21; nvfp4's FLOAT4E2M1 23;
// mxfp8/mxfp4's E8M0 scales 24; 21 for the ONNX Runtime containers.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>
#include <thread>

#include "base/log.h"
#include "pipeline/mixed_precision_search.h"
#include "pipeline/quantize_run.h"
#include "ptqkit/error.h"
#include "quant/rewrite/dynamic_block_activation.h"
#include "quant/rewrite/ort_block_containers.h"
#include "quant/placement/runtime_forms.h"
#include "quant/placement/selectors.h"

namespace ptqkit {
namespace {

// The block length along K: fixed by nvfp4 (16) and mxfp8 (32), --block_size for int4.
int64_t BlockSize(const QuantizeOptions& o, const BlockCodec& codec) {
  return codec.fixed_block_size > 0 ? codec.fixed_block_size : o.block_size;
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

// How the planned weights are searched and stored.
RewriteOptions BlockedRewriteOptions(const QuantizeRun& run, int64_t block_size) {
  const QuantizeOptions& o = run.o;
  RewriteOptions r;
  r.format = &run.format;
  BlockedWeightSearch& w = r.blocked.weight;
  w.block_size = block_size;
  w.zero_point = o.use_zero_point;
  w.alpha_min = o.awqclip_alpha_min;
  w.alpha_step = o.awqclip_alpha_step;
  w.threads = o.intra_op_num_threads > 0 ? o.intra_op_num_threads
                                         : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  w.awq_lite = run.method == "awq_lite";
  r.blocked.trt_activations = !run.ort_containers;
  if (!o.mixed_precision.empty() || !o.int8_nodes.empty()) {
    r.blocked.high_format = &Int8WeightOnlyFormat();
    r.blocked.high_weights = Int8NodeWeights(o, *run.index, run.weights);
  }
  return r;
}

// awq_clip and awq_lite: Grams (and channel magnitudes) from one pass over the calibration samples.
// nvfp4's dynamic-block activations need a calibrated amax each (their global scale).
bool NeedsActivationRanges(const Placement& plan, const QuantFormat& format) {
  if (format.block_codec->scale_code != BlockScaleCode::kE4M3TimesGlobal) return false;
  return std::any_of(plan.tensors.begin(), plan.tensors.end(),
                     [](const QuantizedTensor& q) { return q.dynamic_blocks; });
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

}  // namespace

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

void WeightOnlyOutputVersion(QuantizeRun& run, int64_t* min_opset, int64_t* min_ir_version) {
  const BlockCodec& codec = *run.format.block_codec;
  // nvfp4/mxfp8/mxfp4 for a runtime that wants ONNX Runtime's containers (decided once, here).
  run.ort_containers = FindRuntimeForm(run.o.target_runtime).ort_block_containers && codec.ort_cpu_min_opset > 0;
  const bool ort_containers = run.ort_containers;
  *min_opset = ort_containers ? codec.ort_cpu_min_opset : run.format.min_opset;
  *min_ir_version = ort_containers ? 10 : run.format.min_ir_version;  // IR 10: opset 21
}

// The format's weight-only placement profile with the user's selectors, reported with the nodes
// left in float.
void PlanWeights(QuantizeRun& run) {
  const QuantizeOptions& o = run.o;
  const BlockCodec& codec = *run.format.block_codec;
  run.index.emplace(run.prepared.proto.graph());
  const GraphIndex& index = *run.index;
  PlacementOptions options;
  options.op_types_to_quantize = o.op_types_to_quantize;
  options.op_types_to_exclude = o.op_types_to_exclude;
  options.nodes_to_quantize = o.nodes_to_quantize;
  options.nodes_to_exclude = o.nodes_to_exclude;
  options.format = &run.format;
  options.quantize_activations = o.quantize_activations;
  run.weights = PlanPlacement(index, options);
  if (run.weights.tensors.empty()) NoTargets(o.onnx_path, run.format, index, run.weights);
  for (int node : run.weights.quantized_nodes) ++run.report.quantized_by_op_type[index.node(node).op_type()];
  for (const auto& [node, why] : run.weights.float_reasons) {
    run.report.left_in_float.emplace_back(index.node(node).name(), why);
  }
  run.blocked = BlockedRewriteOptions(run, BlockSize(o, codec));
}

bool WeightOnlyReadsData(const QuantizeRun& run) {
  return run.method != "rtn" || NeedsActivationRanges(run.weights, run.format) ||
         !run.o.calibration_data_path.empty();
}

void CaptureWeightGrams(QuantizeRun& run) {
  const bool grams = run.method != "rtn";
  if (!grams && !NeedsActivationRanges(run.weights, run.format)) return;  // rtn read the data for the loss report
  run.grams.emplace(run.prepared.proto, *run.index, run.weights, run.blocked.blocked.weight.block_size, grams);
  run.report.num_calibration_samples =
      run.grams->Run(*run.data, Runtime(run.o), run.o.progress, &run.report.execution_providers);
  if (grams) run.blocked.blocked.grams = &run.grams->grams();
}

void ChooseInt8Weights(QuantizeRun& run) {
  if (run.o.accuracy_budget >= 0) {
    if (!run.data || run.split.evaluated.empty()) {
      throw Error("--accuracy_budget needs calibration data (--calibration_data_path) and held-out samples "
                  "(--eval_samples > 0)");
    }
    CandidateScorer scorer(run.o, run.reference, *run.data, run.range, run.eval_runtime);
    run.blocked.blocked.cache = &run.quantized_weights;
    run.blocked.blocked.high_weights =
        SearchInt8Weights(run.o, run.prepared.proto, run.weights, run.blocked, scorer, &run.report);
  }
  ReportWeightPrecision(run.format, *run.index, run.weights, run.blocked, &run.report);
}

void RewriteWeights(QuantizeRun& run) {
  const std::map<std::string, float> activation_ranges =
      run.grams ? run.grams->amax() : std::map<std::string, float>{};  // mxfp8's activations need none
  run.stats = InsertQdq(&run.prepared.proto, run.weights, activation_ranges, run.blocked);
  run.report.dynamic_block_activations = run.stats.dynamic_activations;
  if (run.ort_containers) UseOrtCpuContainers(run.prepared.proto.mutable_graph());  // same values, runnable
  run.quantized_weights.clear();
  run.grams.reset();  // the Grams are not needed any more
  run.blocked.blocked.grams = nullptr;
  LogRewrite(run.format, run.method, run.blocked, run.stats);
}

}  // namespace ptqkit
