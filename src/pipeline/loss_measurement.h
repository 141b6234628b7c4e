// The loss report of a quantize run: which calibration samples are held out for it, and the
// comparison of the quantized model with the FP32 model on them (evaluate/), with the likely
// culprit tensors and a warning when the loss passes a threshold.
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <string>
#include <vector>

#include "calib/calibration_table.h"
#include "calib/method.h"
#include "accuracy/output_agreement.h"
#include "runtime/prepared_model.h"
#include "ptqkit/quantize.h"

namespace ptqkit {

// Warning thresholds of the loss report (any output): mean cosine similarity below
// kWarnCosineBelow, top-1 agreement below kWarnTop1Below (rank-2 outputs), or any NaN/Inf. A met
// --accuracy_budget replaces them (the user said what loss is acceptable).
constexpr double kWarnCosineBelow = 0.99;
constexpr double kWarnTop1Below = 0.95;

struct EvalSplit {
  std::vector<int64_t> calibration;  // the samples that calibrate, in file order
  std::vector<int64_t> evaluated;    // the samples the report runs on, in file order; empty: no report
  bool held_out = false;             // the evaluated samples are not calibration samples
};

// min(eval_samples, a quarter of the data) samples are held out when the data has at least 4
// samples (whole batches for a fixed-batch model, which then needs 4 batches), spread evenly
// through the file: of U units, units floor((2i + 1) U / 2H) for i < H. A file written class by
// class, or recorded in time order, then gives the report samples of every part of it (its last
// quarter would be one class, or the end of a recording). With fewer than 4 the report runs on
// the last samples of the calibration data itself (in-sample). The split is by sample, so it does
// not depend on the batch size. eval_samples 0: no report, everything calibrates.
EvalSplit SplitForEvaluation(const CalibrationData& data, int64_t eval_samples);
// Points data->set and data->num_batches at the calibration samples (before calibrating) or at the
// evaluated samples (before the report's runs; `mask_input` is --eval_mask_input, "" for none).
void UseCalibrationSamples(CalibrationData* data, const EvalSplit& split);
accuracy::SampleRange UseEvaluationSamples(CalibrationData* data, const EvalSplit& split,
                                           const std::string& mask_input = "");

// Runs `quantized` on the split's batches and compares it with `reference` (the FP32 outputs on
// the same batches). `runtime` decides the ONNX Runtime level (basic = fake-quant). The warning
// names the activations with the largest quantization error (from `table` and `amax`), or gives
// `advice` when there are none (default: run `ptqkit sensitivity`).
LossReport MeasureLoss(const accuracy::BatchOutputs& reference, const onnx::ModelProto& quantized,
                       const CalibrationData& data, const accuracy::SampleRange& range, bool held_out,
                       const RuntimeOptions& runtime,
                       const calib::CalibrationTable& table, const std::map<std::string, float>& amax,
                       calib::Grid grid, const std::string& advice = "");

}  // namespace ptqkit
