// How far a quantized model's graph outputs are from the FP32 model's on the same samples: the
// loss report every quantize run prints (issue 9) and the measure the accuracy-budget search
// minimises. Both models run in ONNX Runtime on the same batches of the calibration set; the
// comparison is per sample (one row of axis 0 when an output has one row per sample of the batch,
// else the whole output of the batch counts as one sample, like a recurrent state).
//
// Float outputs (float32/float16/bfloat16) are compared in float64: cosine similarity per sample
// (1 when both are zero, 0 when only one is), relative RMS error over all values, the largest
// absolute difference and, for rank-2/3 outputs with a last axis of at least 2 (class scores,
// per-position token scores), the agreement of the argmax over the last axis. Other outputs
// (int64 labels, bool masks) count the samples that are exactly equal.
// Pure functions; thread-compatible.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ptqkit/calibration.h"
#include "ptqkit/quantize.h"
#include "runtime/session.h"
#include "sensitivity/metrics.h"

namespace ptqkit::accuracy {

// Batches [first, first + count) of `batch_size` samples of the calibration set.
struct SampleRange {
  int64_t batch_size = 1;
  int64_t first = 0;
  int64_t count = 0;
  // QuantizeOptions::eval_mask_input: RunOutputs zeroes the positions of every output shaped
  // [batch, sequence, ...] where this [batch, sequence] input is 0, so that both models' outputs
  // agree exactly there and only real positions are compared. "": none.
  std::string mask_input;
};

struct BatchOutputs {
  std::vector<int64_t> rows;                     // samples in each batch
  std::vector<std::vector<HostTensor>> values;  // [batch][graph output]
};

// The model's graph outputs (in graph order) on every batch of `range` (padding zeroed, see
// SampleRange::mask_input). Throws ptqkit::Error (kRuntime) when ONNX Runtime cannot run the model,
// and kInvalidInput when the mask input is missing or not [batch, sequence].
BatchOutputs RunOutputs(const onnx::ModelProto& model, const CalibrationSet& set, const SampleRange& range,
                        const RuntimeOptions& runtime);
// The same for a session model already made of `model` (e.g. over another model's weights).
BatchOutputs RunOutputs(const onnxio::SessionModel& session_model, const onnx::ModelProto& model,
                        const CalibrationSet& set, const SampleRange& range, const RuntimeOptions& runtime);

// Per-output agreement of `quantized` with `reference` (same batches, same outputs in the same
// order; `names` names them). REQUIRES: matching shapes; a mismatch throws ptqkit::Error.
std::vector<OutputLoss> CompareOutputs(const std::vector<std::string>& names, const BatchOutputs& reference,
                                       const BatchOutputs& quantized);

// One number for the accuracy budget: for kl_div / mse / cos (sensitivity/metrics.h) the sum over
// float outputs of the mean over samples, the scan's own scoring; for `top1` the largest top-1
// disagreement (1 - agreement) over the outputs that have one, else 1 - exact-match fraction.
// Non-finite quantized values give +infinity.
enum class BudgetMetric { kKlDiv, kMse, kCos, kTop1 };
BudgetMetric ParseBudgetMetric(const std::string& name);  // kl_div | mse | cos | top1
std::string BudgetMetricName(BudgetMetric metric);
double Divergence(BudgetMetric metric, const BatchOutputs& reference, const BatchOutputs& quantized);
// How many argmax rows `top1` compares on `outputs`: per output that has a top-1, its rows over all
// batches (a [batch, classes] output: one per sample; [batch, positions, classes]: one per
// position), the fewest over those outputs; 0 when no output has one.
int64_t Top1Rows(const BatchOutputs& outputs);

}  // namespace ptqkit::accuracy
