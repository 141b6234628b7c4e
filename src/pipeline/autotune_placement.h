// The autotune step of a quantize run (QuantizeOptions::autotune): regions and groups of the
// rules' placement, the latency backend, the state file and the placement search, wired to the
// run's calibrated candidates and held-out samples. Returns the nodes autotune keeps in float.
#pragma once

#include <onnx/onnx_pb.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "ptqkit/autotune.h"
#include "ptqkit/calibration.h"
#include "calib/calibration_table.h"
#include "ptqkit/quantize.h"
#include "quant/rewrite/model_placement.h"

namespace ptqkit {

struct AutotuneInputs {
  const QuantizeOptions* options = nullptr;
  const onnx::ModelProto* fp32 = nullptr;  // the prepared FP32 model (no Q/DQ)
  // The run's quantized model with `in_float` kept in float on top of the run's own exclusions,
  // with the real calibrated scales and the output precision conversion.
  std::function<onnx::ModelProto(const std::vector<std::string>& in_float)> build;
  // Its divergence from FP32 on the held-out samples (the accuracy-budget measure).
  std::function<double(const onnx::ModelProto& candidate)> divergence;
  std::string divergence_metric;
  std::vector<std::pair<std::string, std::string>> quantized_nodes;  // (node, op type) of the rules' placement
  Batch feeds;  // one batch of model inputs for the timed runs
};

std::vector<std::string> AutotunePlacement(const AutotuneInputs& inputs, AutotuneReport* report);

// The activation tensors to calibrate for autotune: the rules' plan's, and those of every plan
// that keeps one more of its quantized nodes in float (keeping a node in float can move a Q/DQ,
// e.g. to a residual Add's other input). `model` is only read.
std::vector<std::string> AutotuneCalibrationTensors(onnx::ModelProto& model, const PlacementOptions& options,
                                                    const ModelPlacement& plan);

}  // namespace ptqkit
