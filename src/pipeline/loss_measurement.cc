#include "pipeline/loss_measurement.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "base/log.h"
#include "accuracy/tensor_error.h"

namespace ptqkit {

EvalSplit SplitForEvaluation(const CalibrationData& data, int64_t eval_samples) {
  EvalSplit split;
  const int64_t total = data.set.total_samples();
  // A fixed-batch model only runs whole batches: count in batches there.
  const int64_t unit = data.fixed_batch ? data.batch_size : 1;
  const int64_t units = (data.fixed_batch ? data.num_batches * data.batch_size : total) / unit;
  const auto samples_of = [unit](int64_t u, std::vector<int64_t>* to) {
    for (int64_t s = u * unit; s < (u + 1) * unit; ++s) to->push_back(s);
  };
  std::vector<bool> evaluated(static_cast<size_t>(units), false);
  if (eval_samples > 0 && units > 0) {
    const int64_t want_units = (eval_samples + unit - 1) / unit;
    if (units >= 4) {
      const int64_t held = std::max<int64_t>(1, std::min(want_units, units / 4));
      for (int64_t i = 0; i < held; ++i) evaluated[static_cast<size_t>((2 * i + 1) * units / (2 * held))] = true;
      split.held_out = true;
    } else {
      for (int64_t u = units - std::min(units, want_units); u < units; ++u) evaluated[static_cast<size_t>(u)] = true;
    }
  }
  for (int64_t u = 0; u < units; ++u) {
    const bool eval = evaluated[static_cast<size_t>(u)];
    if (eval) samples_of(u, &split.evaluated);
    if (!eval || !split.held_out) samples_of(u, &split.calibration);
  }
  return split;
}

void UseCalibrationSamples(CalibrationData* data, const EvalSplit& split) {
  data->set.SetSamples(split.calibration);
  const auto samples = static_cast<int64_t>(split.calibration.size());
  data->num_batches = data->fixed_batch ? samples / data->batch_size : data->set.NumBatches(data->batch_size);
}

accuracy::SampleRange UseEvaluationSamples(CalibrationData* data, const EvalSplit& split, const std::string& mask_input) {
  data->set.SetSamples(split.evaluated);
  accuracy::SampleRange range;
  range.mask_input = mask_input;
  range.batch_size = data->batch_size;
  range.count = data->set.NumBatches(data->batch_size);
  return range;
}

LossReport MeasureLoss(const accuracy::BatchOutputs& reference, const onnx::ModelProto& quantized,
                       const CalibrationData& data, const accuracy::SampleRange& range, bool held_out,
                       const RuntimeOptions& runtime,
                       const calib::CalibrationTable& table, const std::map<std::string, float>& amax,
                       calib::Grid grid, const std::string& advice) {
  LossReport loss;
  loss.evaluated = true;
  loss.held_out = held_out;
  loss.synthetic = data.synthetic;
  loss.ort_level = runtime.basic_optimizations_only ? "basic" : "default";
  loss.mask_input = range.mask_input;
  std::vector<std::string> names;
  for (const auto& o : quantized.graph().output()) names.push_back(o.name());
  const accuracy::BatchOutputs got = accuracy::RunOutputs(quantized, data.set, range, runtime);
  loss.outputs = accuracy::CompareOutputs(names, reference, got);
  for (int64_t r : reference.rows) loss.samples += r;
  loss.culprits = accuracy::LargestQuantizationErrors(table, amax, grid, 5);

  std::vector<std::string> lost;
  for (const OutputLoss& o : loss.outputs) {
    if (o.non_finite > 0) lost.push_back(fmt::format("output '{}' has {} NaN/Inf value(s)", o.output, o.non_finite));
    else if (o.cosine_mean < kWarnCosineBelow) lost.push_back(fmt::format("output '{}' cosine {:.4f}", o.output, o.cosine_mean));
    // Top-1 of a rank-3 output may be a per-position class (OCR) or a hidden state's argmax
    // (embeddings, meaningless): only [batch, classes] outputs warn on it.
    if (o.rank == 2 && o.top1_agreement && *o.top1_agreement < kWarnTop1Below) {
      lost.push_back(fmt::format("output '{}' top-1 agreement {:.1f}%", o.output, 100.0 * *o.top1_agreement));
    }
  }
  if (!lost.empty()) {
    std::vector<std::string> culprits;
    for (const TensorClipping& c : loss.culprits) {
      culprits.push_back(fmt::format("'{}' ({:.2g} relative error, {:.3g}% clipped)", c.tensor, c.relative_error,
                                     100.0 * c.clipped_fraction));
    }
    loss.warning = fmt::format(
        "quantization lost accuracy: {}. {}", fmt::join(lost, "; "),
        culprits.empty() ? (advice.empty() ? "Run `ptqkit sensitivity` to find the nodes to keep in float." : advice)
                         : fmt::format("Most likely culprits: {}. Keep their consumers in float (--nodes_to_exclude), "
                                       "try another --calibration_method, or set an --accuracy_budget.",
                                       fmt::join(culprits, ", ")));
    // A token model's padded positions carry noise no task metric looks at; say how to leave them out.
    if (range.mask_input.empty()) {
      for (const auto& input : quantized.graph().input()) {
        if (input.name().find("mask") == std::string::npos) continue;
        loss.warning += fmt::format(" (Padded positions count here: if input '{}' marks padding with 0, "
                                    "--eval_mask_input {} leaves them out.)", input.name(), input.name());
        break;
      }
    }
  }
  return loss;
}

}  // namespace ptqkit
