#include "pipeline/candidate_models.h"

#include <set>

#include "base/log.h"
#include "base/temporary_folder.h"
#include "calib/scale_search.h"
#include "onnx/model_io.h"
#include "onnx/session_model.h"
#include "pipeline/channel_capture.h"
#include "pipeline/model_options.h"
#include "pipeline/model_output.h"
#include "quant/corrections/activation_smoothing.h"
#include "quant/corrections/depthwise_equalization.h"
#include "quant/rewrite/weight_qdq_fold.h"

namespace ptqkit {

RewriteOptions RewriteOptionsFor(const QuantizeOptions& o, const QuantFormat& format) {
  RewriteOptions rewrite;
  rewrite.runtime = &EffectiveRuntimeForm(o.target_runtime, format);
  rewrite.dq_only = o.dq_only || rewrite.runtime->integer_weights;
  rewrite.format = &format;
  rewrite.reduce_range = o.reduce_range;
  return rewrite;
}

std::map<std::string, int> ConvInputChannels(const ModelPlacement& plan) {
  std::map<std::string, int> axis;
  const ScopePlacement& main = plan.scopes().front();
  for (const auto& t : ConvInputsToCorrect(*main.index, main.plan)) axis[t] = 1;
  return axis;
}

std::map<std::string, ConvInputStatistics> ConvInputMeans(const std::map<std::string, ChannelStatistics>& channels) {
  std::map<std::string, ConvInputStatistics> means;
  for (const auto& [t, stats] : channels) means[t] = ConvInputStatistics{stats.Mean(), stats.shape};
  return means;
}

int SmoothMatMulInputs(onnx::ModelProto* model, const ModelPlacement& plan, const CalibrationData& data,
                       const RuntimeForm& form, const RuntimeOptions& runtime, double alpha, int* inserted) {
  *inserted = 0;
  const ScopePlacement& main = plan.scopes().front();
  const std::vector<SmoothingSite> sites = FindSmoothingSites(*main.index, main.plan, form.fuses_exported_gelu);
  if (sites.empty()) return 0;
  std::map<std::string, int> axis;
  for (const auto& s : sites) axis[s.tensor] = -1;
  std::map<std::string, std::vector<float>> amax;
  for (const auto& [t, stats] : CaptureChannelStatistics(*model, data.set, axis, data.batch_size, data.num_batches,
                                                         runtime)) {
    amax[t] = stats.absmax;
  }
  const int n = SmoothActivations(main.scope.graph, *main.index, sites, amax, alpha, inserted);
  log::Info("smoothquant (alpha {}): smoothed the input of {} MatMul group(s), {} by an inserted Mul", alpha, n,
            *inserted);
  return n;
}

int EqualizeDepthwiseConvInputs(onnx::ModelProto* model, const ModelPlacement& plan, const CalibrationData& data,
                                const RuntimeOptions& runtime) {
  const ScopePlacement& main = plan.scopes().front();
  const std::vector<DepthwiseSite> sites = FindDepthwiseSites(*main.index, main.plan);
  if (sites.empty()) return 0;
  std::map<std::string, int> axis;
  for (const auto& s : sites) axis[s.input] = 1;
  std::map<std::string, std::vector<float>> amax;
  for (const auto& [t, stats] : CaptureChannelStatistics(*model, data.set, axis, data.batch_size, data.num_batches,
                                                         runtime)) {
    amax[t] = stats.absmax;
  }
  const int n = EqualizeDepthwiseInputs(main.scope.graph, *main.index, sites, amax);
  log::Info("depthwise equalization: {} of {} depthwise Conv input(s) equalized", n, sites.size());
  return n;
}

CandidateBuilder::CandidateBuilder(CandidateRecipe recipe)
    : recipe_(std::move(recipe)), rewrite_(RewriteOptionsFor(*recipe_.options, *recipe_.format)) {}

std::unique_ptr<ModelPlacement> CandidateBuilder::Plan(onnx::ModelProto* model, const KeptInFloat& in_float) const {
  PlacementOptions po = PlacementFor(*recipe_.options);
  po.kept_in_float = in_float;
  std::set<std::string> matched;
  po.matched_selectors = &matched;
  auto plan = std::make_unique<ModelPlacement>(model, po);
  if (recipe_.second_format != nullptr && !recipe_.second_format_nodes.empty()) {
    plan->UseFormatFor(recipe_.second_format_nodes, recipe_.second_format);
  }
  for (const auto& [tensor, why] : recipe_.drops) plan->DropTensor(tensor, why);
  for (const auto& t : plan->ActivationTensors()) {
    if (!recipe_.table->tensors.count(t) && !recipe_.fixed_scales.count(t)) {
      plan->DropTensor(t, "its input was not calibrated (a node kept in float moved a Q/DQ)");
    }
  }
  return plan;
}

std::map<std::string, float> CandidateBuilder::Ranges(const ModelPlacement& plan) const {
  const std::map<std::string, const QuantFormat*> formats = plan.TensorFormats();
  std::map<std::string, float> amax;
  for (const auto& name : plan.ActivationTensors()) {
    const auto own = formats.find(name);
    const QuantFormat& format = own != formats.end() ? *own->second : *recipe_.format;
    auto fixed = recipe_.fixed_scales.find(name);
    auto it = recipe_.table->tensors.find(name);
    if (fixed != recipe_.fixed_scales.end()) {
      amax[name] = fixed->second * format.qmax;  // amax = scale * the grid's largest value
    } else if (it != recipe_.table->tensors.end()) {
      amax[name] = calib::ComputeAmax(it->second, recipe_.method, recipe_.options->percentile, format.grid);
    }
  }
  return plan.Ranges(amax);
}

RewriteStats CandidateBuilder::Rewrite(ModelPlacement* plan, const std::map<std::string, float>& amax,
                                       int* corrected) const {
  return RewriteWith(plan, amax, rewrite_, corrected);
}

RewriteStats CandidateBuilder::RewriteWith(ModelPlacement* plan, const std::map<std::string, float>& amax,
                                           const RewriteOptions& rewrite, int* corrected) const {
  if (!recipe_.conv_input_means.empty()) {
    const ScopePlacement& main = plan->scopes().front();
    const int n = CorrectConvBiases(main.scope.graph, *main.index, main.plan, recipe_.conv_input_means, rewrite);
    if (corrected) *corrected = n;
  }
  return plan->Rewrite(amax, rewrite);
}

onnx::ModelProto CandidateBuilder::Build(const onnx::ModelProto& fp32, const std::vector<std::string>& in_float) const {
  onnx::ModelProto candidate = fp32;
  KeptInFloat kept;
  for (const auto& node : in_float) kept.emplace(node, "kept in float by the candidate");
  std::unique_ptr<ModelPlacement> plan = Plan(&candidate, kept);
  Rewrite(plan.get(), Ranges(*plan));
  QuantizeReport scratch;
  ConvertPrecision(&candidate, *recipe_.options, &scratch);
  return candidate;
}

bool CandidateBuilder::LightApplies(const onnx::ModelProto& fp32) const {
  // A light candidate fakes its weights in the run's one format.
  return recipe_.options->high_precision_dtype == "fp32" && recipe_.second_format == nullptr &&
         onnxio::WeightsGoAsInputs(fp32);
}

onnx::ModelProto CandidateBuilder::BuildLight(const onnx::ModelProto& fp32, const std::vector<std::string>& in_float) const {
  onnx::ModelProto candidate =
      onnxio::CopyWithoutLargeWeights(fp32, onnxio::kDefaultViewBytes, onnxio::WeightPlaceholder);
  std::map<std::string, const onnx::TensorProto*> source;
  for (const auto& t : fp32.graph().initializer()) source[t.name()] = &t;
  KeptInFloat kept;
  for (const auto& node : in_float) kept.emplace(node, "kept in float by the candidate");
  std::unique_ptr<ModelPlacement> plan = Plan(&candidate, kept);
  // The quantized weights' Q -> DQ pairs read placeholders, and run as one FakeQuantizeWeight each
  // over the FP32 model's own buffers: the candidate holds no weight, and its outputs are the
  // pairs' bits.
  RewriteOptions rewrite = rewrite_;
  rewrite.dq_only = false;
  rewrite.weight_source = &source;
  RewriteWith(plan.get(), Ranges(*plan), rewrite);
  FakeQuantizeWeightsAtRun(&candidate);
  return candidate;
}

CandidateScorer::CandidateScorer(const QuantizeOptions& o, const accuracy::BatchOutputs& reference,
                                 CalibrationData& data, const accuracy::SampleRange& eval_range,
                                 const RuntimeOptions& runtime)
    : o_(o), reference_(reference), data_(data), eval_range_(eval_range), runtime_(runtime),
      metric_(accuracy::ParseBudgetMetric(o.accuracy_budget_metric)) {}

double CandidateScorer::operator()(const onnx::ModelProto& candidate) {
  if (!o_.accuracy_eval) {
    return accuracy::Divergence(metric_, reference_, accuracy::RunOutputs(candidate, data_.set, eval_range_, runtime_));
  }
  if (!fp32_score_) fp32_score_ = o_.accuracy_eval(o_.onnx_path);
  TemporaryFolder folder("ptqkit-candidate-");
  const std::string path = folder.path() + "/candidate.onnx";
  onnxio::SaveModel(candidate, path);
  return *fp32_score_ - o_.accuracy_eval(path);
}

double CandidateScorer::ScoreDisposable(onnx::ModelProto candidate) {
  // Not with the caller's scorer: it reads the candidate as written, from a file.
  if (!o_.accuracy_eval) FoldWeightQdqForSession(&candidate);
  return (*this)(candidate);
}

double CandidateScorer::ScoreLight(const onnx::ModelProto& light, const onnx::ModelProto& fp32) {
  const onnxio::SessionModel session = onnxio::MakeSessionModelOver(light, fp32.graph(), /*all_as_inputs=*/true);
  return accuracy::Divergence(metric_, reference_, accuracy::RunOutputs(session, light, data_.set, eval_range_, runtime_));
}

std::string CandidateScorer::metric_name() const {
  return o_.accuracy_eval ? "accuracy_eval drop" : accuracy::BudgetMetricName(metric_);
}

}  // namespace ptqkit
