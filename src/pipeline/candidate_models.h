// How one quantize run turns its FP32 model and calibration into quantized models: the final
// model, every accuracy-budget candidate and every autotune candidate are built by the same
// CandidateBuilder, so they differ only in the nodes they keep in float (same ranges, bias
// correction, rewrite options and precision conversion). CandidateScorer scores candidates alike.
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "accuracy/accuracy_budget.h"
#include "accuracy/output_agreement.h"
#include "calib/calibration_table.h"
#include "calib/method.h"
#include "ptqkit/quantize.h"
#include "quant/corrections/bias_correction.h"
#include "quant/formats/formats.h"
#include "quant/rewrite/model_placement.h"
#include "quant/rewrite/qdq_rewrite.h"
#include "runtime/channel_statistics.h"
#include "runtime/prepared_model.h"

namespace ptqkit {

using TensorDrops = std::vector<std::pair<std::string, std::string>>;  // (tensor, why): float in every plan
using KeptInFloat = std::map<std::string, std::string>;                 // node -> why (a search chose it)

// How the options shape the Q/DQ nodes.
RewriteOptions RewriteOptionsFor(const QuantizeOptions& o, const QuantFormat& format);

// The inputs of every Conv the plan may quantize (main graph) with their channel axis: what the
// calibration pass also folds per channel for bias correction (CaptureRequest::channel_axis).
std::map<std::string, int> ConvInputChannels(const ModelPlacement& plan);

// Bias correction's input statistics from those per-channel statistics.
std::map<std::string, ConvInputStatistics> ConvInputMeans(const std::map<std::string, ChannelStatistics>& channels);

// Depthwise input equalization (quant/corrections/depthwise_equalization.h), from per-channel maxima measured
// on the FP32 model (one more forward pass when the plan has depthwise Convs). Edits `model` (the
// plan must be made again when it returns > 0); returns the number of equalized Conv inputs.
int EqualizeDepthwiseConvInputs(onnx::ModelProto* model, const ModelPlacement& plan, const CalibrationData& data,
                                const RuntimeOptions& runtime);

// SmoothQuant-style smoothing of the quantized MatMuls' inputs (quant/corrections/activation_smoothing.h),
// from per-channel maxima measured on the FP32 model (one more forward pass when there are sites).
// Edits `model`; returns the number of smoothed inputs, `*inserted` how many of them by an inserted
// Mul (the plan must be made again when it is > 0). Constants the runtime's form needs as they are
// (RuntimeForm::fuses_exported_gelu) are not edited.
int SmoothMatMulInputs(onnx::ModelProto* model, const ModelPlacement& plan, const CalibrationData& data,
                       const RuntimeForm& form, const RuntimeOptions& runtime, double alpha, int* inserted);

struct CandidateRecipe {
  const QuantizeOptions* options = nullptr;
  const QuantFormat* format = nullptr;
  calib::Method method = calib::Method::kMse;
  const calib::CalibrationTable* table = nullptr;
  TensorDrops drops;
  std::map<std::string, float> fixed_scales;                    // --calibration_cache_path: tensor -> scale
  std::map<std::string, ConvInputStatistics> conv_input_means;  // bias correction; empty: none
  // --mixed_precision int8,fp8: the nodes quantized in `second_format` instead of `format`
  // (pipeline/format_choice.h chooses them).
  const QuantFormat* second_format = nullptr;
  std::set<std::string> second_format_nodes;
};

class CandidateBuilder {
 public:
  explicit CandidateBuilder(CandidateRecipe recipe);

  // --mixed_precision: from now on `nodes` are quantized in the recipe's second format.
  void UseSecondFormatFor(std::set<std::string> nodes) { recipe_.second_format_nodes = std::move(nodes); }

  // The run's placement on `model` with the nodes of `in_float` also kept in float, for the reason
  // given. Selectors are matched silently: the run's first plan already warned about them. Keeping a
  // node in float can move a Q/DQ onto a tensor the calibration never observed (a residual Add's
  // other input); such a Q/DQ is left out rather than given no range.
  std::unique_ptr<ModelPlacement> Plan(onnx::ModelProto* model, const KeptInFloat& in_float) const;

  // Every activation amax of `plan`: the calibration method's on the table, a fixed scale where the
  // TensorRT cache gives one, then shared where the placement shares ranges (Concat inputs...).
  std::map<std::string, float> Ranges(const ModelPlacement& plan) const;

  // Bias correction (when measured), then the Q/DQ rewrite with `amax`. `corrected`: the number of
  // Conv biases corrected.
  RewriteStats Rewrite(ModelPlacement* plan, const std::map<std::string, float>& amax, int* corrected = nullptr) const;

  // A copy of `fp32` quantized with `in_float` kept in float, in the run's output precision.
  onnx::ModelProto Build(const onnx::ModelProto& fp32, const std::vector<std::string>& in_float) const;

  // Whether candidates of `fp32` can be built light (BuildLight) and score as Build's would: its
  // weights go to ONNX Runtime as inputs (so a built candidate would be scored folded, never
  // pre-packed) and nothing converts the float weights (--high_precision_dtype fp32).
  bool LightApplies(const onnx::ModelProto& fp32) const;
  // The same candidate for scoring only (CandidateScorer::ScoreLight), holding none of `fp32`'s
  // large weights: they are placeholders run over `fp32`'s, and each quantized one is
  // fake-quantized at run time (FakeQuantizeWeightsAtRun). The outputs are the bits of Build's
  // candidate with its weights' Q/DQ folded.
  // REQUIRES: LightApplies(fp32).
  onnx::ModelProto BuildLight(const onnx::ModelProto& fp32, const std::vector<std::string>& in_float) const;

 private:
  RewriteStats RewriteWith(ModelPlacement* plan, const std::map<std::string, float>& amax, const RewriteOptions& rewrite,
                           int* corrected = nullptr) const;

  CandidateRecipe recipe_;
  RewriteOptions rewrite_;
};

// What budget and autotune candidates are scored by: the divergence of their outputs from FP32 on
// the held-out samples, or, with the caller's scorer (Python's accuracy_eval), the drop of its
// score from the FP32 model's (computed once, the first time it is needed).
class CandidateScorer {
 public:
  CandidateScorer(const QuantizeOptions& o, const accuracy::BatchOutputs& reference, CalibrationData& data,
                  const accuracy::SampleRange& eval_range, const RuntimeOptions& runtime);

  double operator()(const onnx::ModelProto& candidate);
  // The same for a candidate nothing else needs, its weights' Q/DQ folded first where that gives
  // the same bits faster (FoldWeightQdqForSession, as the loss report does).
  double ScoreDisposable(onnx::ModelProto candidate);
  // A BuildLight candidate of `fp32`. REQUIRES: no accuracy_eval (it reads a file).
  double ScoreLight(const onnx::ModelProto& light, const onnx::ModelProto& fp32);
  accuracy::BudgetMetric metric() const { return metric_; }
  // The argmax rows a `top1` score compares (accuracy::Top1Rows of the reference); 0 with a user
  // evaluator (accuracy_eval), whose rows ptqkit does not see.
  int64_t top1_rows() const { return o_.accuracy_eval ? 0 : accuracy::Top1Rows(reference_); }
  std::string metric_name() const;

 private:
  const QuantizeOptions& o_;
  const accuracy::BatchOutputs& reference_;
  CalibrationData& data_;
  const accuracy::SampleRange& eval_range_;
  const RuntimeOptions& runtime_;
  accuracy::BudgetMetric metric_;
  std::optional<double> fp32_score_;
};

}  // namespace ptqkit
