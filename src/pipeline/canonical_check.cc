#include "pipeline/canonical_check.h"

#include <algorithm>

#include "accuracy/output_agreement.h"
#include "base/log.h"

namespace ptqkit {

void CompareCanonicalForm(CanonicalForm* canonical, const onnx::ModelProto& folded, const CalibrationData* data,
                          const RuntimeOptions& runtime, QuantizeReport* report) {
  report->folded_batchnorms = canonical->stats.batchnorms_folded;
  report->folded_channel_affines = canonical->stats.affines_folded;
  report->fused_activations = canonical->stats.activations_fused;
  report->folded_pads = canonical->stats.pads_folded;
  if (!canonical->before || data == nullptr || data->num_batches == 0) {
    canonical->before.reset();
    return;
  }
  // A few batches are enough to see what rounding did; the check must cost little next to calibration.
  constexpr int64_t kCheckedSamples = 8;
  accuracy::SampleRange range;
  range.batch_size = data->batch_size;
  range.first = 0;
  range.count = std::min<int64_t>(data->num_batches, std::max<int64_t>(1, kCheckedSamples / data->batch_size));  // batches
  RuntimeOptions basic = runtime;
  basic.basic_optimizations_only = true;
  const accuracy::BatchOutputs before = accuracy::RunOutputs(*canonical->before, data->set, range, basic);
  canonical->before.reset();
  const accuracy::BatchOutputs after = accuracy::RunOutputs(folded, data->set, range, basic);
  int64_t samples = 0;
  for (int64_t rows : after.rows) samples += rows;
  std::vector<std::string> names;
  for (const auto& o : folded.graph().output()) names.push_back(o.name());
  double worst = 0.0;
  for (const auto& loss : accuracy::CompareOutputs(names, before, after)) {
    if (loss.is_float) worst = std::max(worst, loss.max_abs_diff);
  }
  report->canonical_max_abs_diff = worst;
  report->canonical_checked_samples = samples;
  log::Info("canonical form vs the model as given: max |diff| {:.3g} over {} sample(s)", worst, samples);
}

}  // namespace ptqkit
