// ScoreSensitivityShard(): one shard of a sensitivity scan (`ptqkit sensitivity --shard K/N`).
// It calibrates (or reads --calibration_cache) and computes the FP32 reference exactly as a whole
// scan does, then probes only targets K, K+N, ...; shard::MergeSensitivityParts() turns the N
// parts into the whole scan's result.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "ptqkit/sensitivity.h"
#include "runtime/prepared_model.h"
#include "scan/sensitivity_part.h"

namespace ptqkit {

// REQUIRES: 0 <= options.shard_index < options.shard_count. Throws ptqkit::Error as
// ScoreSensitivity() does, except that a shard that scores nothing is not an error (its targets
// may all legitimately fail; the merge checks the whole).
shard::SensitivityPart ScoreSensitivityShard(const SensitivityOptions& options);

// ScoreSensitivity() on `model`, which the caller has loaded and prepared from options.onnx_path
// (at least at the target format's opset) and may have edited since: quantize's --accuracy_budget
// ranks the nodes of the model it quantizes (smoothed) without reading the weights a second time.
// REQUIRES: `model` is not edited during the call.
sensitivity::SensitivityResult ScoreSensitivityOf(const SensitivityOptions& options, const PreparedModel& model);

// The tensors a scan with `options` calibrates: the union of its probes' activation tensors, on
// the prepared model (upgraded to opset 21 for fp8). `ptqkit calibrate --for_sensitivity` observes
// exactly these, because ONNX Runtime fuses differently when other tensors are graph outputs and
// activations can then differ in the last bit: a table of the same tensors gives the same scores.
std::vector<std::string> ScanCalibrationTensors(const onnx::ModelProto& model, const SensitivityOptions& options);

}  // namespace ptqkit
