// QuantizeRun: what one Quantize() call carries from step to step. The steps are listed, in order,
// in pipeline/quantize.cc; every mode runs the same list. A weight-only format (int4, nvfp4, mxfp8,
// mxfp4) differs in four steps only (and has no GPTQ rounding):
//  - plan: its MatMul/Gemm weights (the format's weight-only placement profile), not activations;
//  - calibrate: one pass that folds each planned weight's input into block Gram matrices
//    (pipeline/gram_capture.h), instead of one that collects activation statistics;
//  - search and rewrite: the budget chooses INT8 weights (--mixed_precision int4,int8) instead of
//    nodes left in float, and the writer stores blocked weights with no activation Q/DQ.
// The option check, the data read and held-out split, the FP32 reference, precision conversion,
// the staged write, the loss report and the commit are one code path for every mode.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "accuracy/output_agreement.h"
#include "calib/calibration_table.h"
#include "onnx/graph_index.h"
#include "pipeline/candidate_models.h"
#include "pipeline/gram_capture.h"
#include "pipeline/loss_measurement.h"
#include "pipeline/model_options.h"
#include "ptqkit/quantize.h"
#include "quant/formats/blocked_weight_search.h"
#include "quant/formats/formats.h"
#include "quant/rewrite/model_placement.h"
#include "quant/placement/placement.h"
#include "quant/rewrite/qdq_rewrite.h"
#include "runtime/prepared_model.h"

namespace ptqkit {

using QuantizeClock = std::chrono::steady_clock;

// The nodes the searches keep in float: --accuracy_budget's, then --autotune's (over the budget's).
struct SearchChoices {
  std::vector<std::string> budget, autotune;
};

struct QuantizeRun {
  QuantizeRun(const QuantizeOptions& options, const QuantFormat& format);

  const QuantizeOptions& o;
  const QuantFormat& format;
  const bool weight_only;
  const QuantFormat* second_format = nullptr;  // --mixed_precision int8,fp8: the other activation format
  const QuantizeClock::time_point start;
  QuantizeReport report;
  std::string method;  // the resolved --calibration_method

  PreparedModel prepared;
  CanonicalForm canonical;

  // The data, when the run reads any: calibration samples, and the held-out ones with the FP32
  // model's outputs on them (the loss report, the budget and autotune compare with these).
  std::optional<CalibrationData> data;
  EvalSplit split;
  accuracy::SampleRange range;
  accuracy::BatchOutputs reference;
  double reference_seconds = 0.0;
  RuntimeOptions eval_runtime;  // how the loss report and the searches run candidates

  // Activation formats (int8, fp8).
  std::unique_ptr<ModelPlacement> plan;
  std::map<std::string, float> trt_scales;  // --calibration_cache_path
  int64_t trt_uncached = 0;
  calib::CalibrationTable table;
  TensorDrops drops;                                            // left in float by every plan
  std::map<std::string, ConvInputStatistics> conv_input_means;  // bias correction; empty: none
  std::optional<CandidateBuilder> build;                        // plans, ranges and candidates of this run
  std::map<std::string, float> amax;                            // the final plan's ranges
  SearchChoices chosen;

  // Weight-only formats.
  std::optional<GraphIndex> index;  // of the model before the rewrite
  Placement weights;                // the planned weights
  RewriteOptions blocked;           // their block search and encoding
  bool ort_containers = false;      // nvfp4/mxfp8/mxfp4 in containers ONNX Runtime's CPU kernels run
  std::optional<GramCapture> grams;
  std::map<std::string, BlockedWeight> quantized_weights;  // the budget's candidates quantize each weight once

  RewriteStats stats;

  double Elapsed() const;
};

// Steps of the activation formats (pipeline/activation_steps.cc).
// The placement with activations, and TensorRT's cached scales when given.
void PlanActivations(QuantizeRun& run);
// Whether the ranges come from data (not a calibration table, nor a TensorRT cache with every scale).
bool ActivationRangesFromData(const QuantizeRun& run);
// The ranges: loaded, or (data open) depthwise equalization and smoothing, then one statistics pass.
void CalibrateActivationRanges(QuantizeRun& run);
// --accuracy_budget and --autotune: the nodes they keep in float, and the final plan.
void SearchActivationPlacements(QuantizeRun& run);
// --weight_rounding gptq on the final plan.
void RoundActivationFormatWeights(QuantizeRun& run);
// Bias correction and the Q/DQ rewrite; refuses a run that quantized nothing.
void RewriteActivations(QuantizeRun& run);

// Steps of the weight-only formats (pipeline/weight_only_steps.cc).
// Their options (block size, zero points, AWQ search, --quantize_activations ...).
void CheckWeightOnlyOptions(const QuantizeOptions& o, const QuantFormat& format);
// The opset and IR version the output needs (blocked DequantizeLinear: 21; the element types: more).
// Decides run.ort_containers, which PlanWeights and the rewrite read.
void WeightOnlyOutputVersion(QuantizeRun& run, int64_t* min_opset, int64_t* min_ir_version);
// The MatMul/Gemm weights to quantize, and how they are searched and stored.
void PlanWeights(QuantizeRun& run);
// Whether the run reads data: awq_clip/awq_lite's Grams, nvfp4's activation ranges, or a loss report.
bool WeightOnlyReadsData(const QuantizeRun& run);
// The calibration pass (data open): block Gram matrices and dynamic-block activation ranges.
void CaptureWeightGrams(QuantizeRun& run);
// --accuracy_budget with --mixed_precision int4,int8: the INT8 weights.
void ChooseInt8Weights(QuantizeRun& run);
// The blocked weights written (and nvfp4/mxfp8's dynamic activations), in the target's containers.
void RewriteWeights(QuantizeRun& run);

}  // namespace ptqkit
