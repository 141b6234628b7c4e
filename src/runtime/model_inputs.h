// What the model expects as input, read from its graph: names, element types, dims (-1 where
// dynamic), and the calibration batch size that follows from them and the user's options.
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <string>
#include <vector>

#include "ptqkit/calibration.h"

namespace ptqkit {

// Graph inputs that are not initializers.
std::vector<InputSpec> ModelInputSpecs(const onnx::GraphProto& graph);

// The sample axis of `name` in `axes` (CalibrationSet::sample_axis per input; -1 = fixed); 0 when absent.
int64_t SampleAxis(const std::map<std::string, int64_t>& axes, const std::string& name);

// Batch size for calibration (each input's sample axis from `axes`, fixed inputs skipped): the sample axis of --calibration_shapes, else the model's static batch
// size, else `requested` (--calibration_batch_size), else 1. Throws ptqkit::Error when these
// disagree (e.g. --calibration_batch_size 8 for a model whose batch is fixed to 1).
int64_t ChooseBatchSize(const std::vector<InputSpec>& inputs,
                        const std::map<std::string, std::vector<int64_t>>& shapes, int64_t requested,
                        const std::map<std::string, int64_t>& axes = {});

}  // namespace ptqkit
