#include "scan/probe_sessions.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>

#include "base/log.h"
#include "onnx/session_model.h"
#include "quant/rewrite/qdq_rewrite.h"
#include "quant/rewrite/weight_qdq_fold.h"
#include "scan/probe_merge.h"

namespace ptqkit {
namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Probes per merged session. Measured on ResNet-18 (68 node probes): 16 per session was 20 % slower
// than 4 (one large graph runs with worse locality); 1–4 are within noise; on small models the
// saved session start-ups matter a little more.
constexpr size_t kProbesPerSession = 4;
// With weights as inputs (light probes) each probe dequantizes its weight at run time, and a merged
// session may hold every probe's dequantized weight at once; large models have few probes per
// second anyway, so each runs alone.
constexpr size_t kLightProbesPerSession = 1;

}  // namespace

ProbeSessions::ProbeSessions(const ProbeContext& context, SensitivityResult* result)
    : c_(context), result_(result), skeleton_(onnxio::CopyWithoutInitializers(*context.model)),
      light_(onnxio::WeightsGoAsInputs(*context.model)) {
  for (const auto& t : c_.model->graph().initializer()) {
    original_initializers_.insert(t.name());
    if (light_) weight_source_[t.name()] = &t;
  }
}

void ProbeSessions::Fail(size_t i, const std::string& why) {
  if (!done_.insert(i).second) return;
  result_->scores.erase((*c_.probes)[i].target);
  result_->failed.emplace_back((*c_.probes)[i].target, why);
  c_.progress();
}

// kNonFiniteScore and a non_finite entry when its outputs turned NaN/Inf (e.g. a quantized Sqrt
// input of a decomposed LayerNorm hitting 0): the most sensitive target, whatever other chunks say.
void ProbeSessions::NonFinite(size_t i, const std::string& why) {
  if (!done_.insert(i).second) return;
  const std::string& target = (*c_.probes)[i].target;
  log::Warn("sensitivity: quantizing '{}' makes {}; it ranks first", target, why);
  result_->non_finite.emplace_back(target, why);
  result_->scores[target] = kNonFiniteScore;
  c_.progress();
}

void ProbeSessions::Record(size_t i, const ProbeOutputs& outputs) {
  const std::string bad = NonFiniteOutputs(outputs);
  if (!bad.empty()) {
    NonFinite(i, bad);
    return;
  }
  auto it = scores_.find(i);
  if (it == scores_.end()) it = scores_.emplace(i, sensitivity::ScoreAccumulator(c_.metric, c_.reference->output_names.size())).first;
  AddToScore(*c_.reference, outputs, *c_.eval, &it->second);
}

const sensitivity::ScoreAccumulator* ProbeSessions::Accumulated(size_t i) const {
  auto it = scores_.find(i);
  return it == scores_.end() ? nullptr : &it->second;
}

void ProbeSessions::Finish(size_t i) {
  const sensitivity::ScoreAccumulator* acc = Accumulated(i);
  const double score = acc ? acc->Score() : 0.0;
  if (!std::isfinite(score)) {
    NonFinite(i, fmt::format("the {} score is {}", result_->metric, score));
    return;
  }
  if (!done_.insert(i).second) return;
  result_->scores[(*c_.probes)[i].target] = score;
  c_.progress();
}

void ProbeSessions::Evaluate(size_t i) {
  const Probe& p = (*c_.probes)[i];
  const Reference& ref = *c_.reference;
  if (p.plan.tensors.empty()) {
    Fail(i, "probe inserts no Q/DQ (no quantizable float input)");
    return;
  }
  try {
    RewriteOptions rewrite;
    rewrite.format = c_.format;
    rewrite.reserved_names = &original_initializers_;
    // A model whose weights ONNX Runtime gets as inputs (over 256 MiB): the probe's weights are
    // placeholders, its session takes every large tensor as an input from the model's own buffers,
    // and each quantized weight is fake-quantized at run time by one node (FakeQuantizeWeightsAtRun).
    // A probe holding its weights as initializers had ONNX Runtime copy them, pre-pack them and fold
    // their Q->DQ: four probes of 64 MiB weights took 0.5 GiB more at peak; Q->DQ on an input weight
    // would be slow instead (per-channel kernels along the last axis, onnx/session_model.h).
    if (light_) rewrite.weight_source = &weight_source_;
    if (!ref.has_boundaries) {
      onnx::ModelProto rewritten =
          light_ ? onnxio::CopyWithoutLargeWeights(*c_.model, onnxio::kDefaultViewBytes, onnxio::WeightPlaceholder)
                 : *c_.model;
      InsertQdq(&rewritten, p.plan, PlanRanges(p.plan, *c_.amax), rewrite);
      if (light_) FakeQuantizeWeightsAtRun(&rewritten);
      const auto run_start = Clock::now();
      const ProbeOutputs outputs =
          RunOnReference(rewritten, light_ ? &c_.model->graph() : nullptr, ref.output_names, ref.output_names, ref,
                         c_.runtime, light_);
      run_seconds_ += Since(run_start);
      Record(i, outputs);
      return;
    }
    if (p.cut.outputs.empty()) {  // reaches no graph output: identical to FP32
      Finish(i);
      return;
    }
    onnx::ModelProto rewritten = skeleton_;
    AddPlanWeights(p.plan, c_.model->graph(), &rewritten, light_);
    InsertQdq(&rewritten, p.plan, PlanRanges(p.plan, *c_.amax), rewrite);
    if (light_) FakeQuantizeWeightsAtRun(&rewritten);
    pending_.push_back({i, BuildProbeSubmodel(rewritten, c_.model->graph(), p.cut, ref.types), p.cut.outputs});
  } catch (const std::exception& e) {
    Fail(i, e.what());
  }
  if (pending_.size() >= (light_ ? kLightProbesPerSession : kProbesPerSession)) RunMerged();
}

void ProbeSessions::Flush() { RunMerged(); }

// Evaluates the pending probes in one merged session; if that fails, one by one.
void ProbeSessions::RunMerged() {
  if (pending_.empty()) return;
  std::vector<onnx::ModelProto> subs;
  for (const auto& p : pending_) subs.push_back(p.submodel);
  const MergedProbes merged = MergeProbes(subs, original_initializers_);
  std::vector<std::string> merged_outputs, original_names;
  for (size_t k = 0; k < pending_.size(); ++k) {
    for (size_t j = 0; j < pending_[k].outputs.size(); ++j) {
      merged_outputs.push_back(merged.outputs[k][j]);
      original_names.push_back(merged.outputs[k][j]);
    }
  }
  struct AddTime {
    double& total;
    Clock::time_point start;
    ~AddTime() { total += Since(start); }
  } timer{run_seconds_, Clock::now()};
  const Reference& ref = *c_.reference;
  try {
    const ProbeOutputs all =
        RunOnReference(merged.model, &c_.model->graph(), merged_outputs, original_names, ref, c_.runtime, light_);
    for (size_t k = 0; k < pending_.size(); ++k) {
      ProbeOutputs mine(all.size());
      for (size_t b = 0; b < all.size(); ++b)
        for (size_t j = 0; j < pending_[k].outputs.size(); ++j) {
          mine[b][pending_[k].outputs[j]] = all[b].at(merged.outputs[k][j]);
        }
      Record(pending_[k].probe, mine);
    }
  } catch (const std::exception&) {
    for (const auto& p : pending_) {
      try {
        const ProbeOutputs mine =
            RunOnReference(p.submodel, &c_.model->graph(), p.outputs, p.outputs, ref, c_.runtime, light_);
        Record(p.probe, mine);
      } catch (const std::exception& e) {
        Fail(p.probe, e.what());
      }
    }
  }
  pending_.clear();
}

}  // namespace ptqkit
