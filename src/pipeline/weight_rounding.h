// `--weight_rounding gptq`: every weight the final plan quantizes (Conv, MatMul, Gemm; main graph)
// is rounded by Hessian-aware rounding (quant/corrections/hessian_rounding.h) on the Gram matrices of its
// input, collected on the calibration samples in as few extra forward passes as a memory cap on
// the Gram matrices allows. The weight initializers are overwritten with values the Q/DQ rewrite
// turns back into the chosen codes; with bias correction on, a Conv's bias also takes away the mean
// shift the new rounding makes (the rewrite's own correction then finds nothing left but the
// pinned maxima), so its codes are chosen on the centred Gram matrix (the error the bias cannot
// take away). Each layer is rounded against its float input: rounding against the input the
// quantized model computes (compensating upstream error) was tried and over-corrects when every
// layer does it from one capture (see issue 23's notes). Runs after the plan is final and the FP32
// reference is taken, before the rewrite.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <utility>
#include <vector>

#include "ptqkit/quantize.h"
#include "quant/rewrite/model_placement.h"
#include "quant/rewrite/qdq_rewrite.h"
#include "runtime/prepared_model.h"
#include "runtime/session.h"

namespace ptqkit {

struct WeightRoundingSettings {
  const RewriteOptions* rewrite = nullptr;  // format, reduce_range: the grid the rewrite will use
  bool correct_conv_biases = true;
  int threads = 1;
  double gram_bytes_per_pass = 1024.0 * 1024.0 * 1024.0;  // Gram matrices held at once
};

// REQUIRES: `plan` is over `model` and nothing has been rewritten yet; `data` views the calibration
// samples. Fills report->weight_rounding.
void RoundWeightsWithHessian(onnx::ModelProto* model, const ModelPlacement& plan, const CalibrationData& data,
                             const RuntimeOptions& runtime, const WeightRoundingSettings& settings,
                             WeightRoundingReport* report);

}  // namespace ptqkit
