// CaptureChannelStatistics: per-channel statistics (runtime/channel_statistics.h) of a few
// activation tensors of the main graph, in a streaming pass of its own over the calibration
// batches (FP32 model, ONNX Runtime): for edits that must come before calibration (activation
// smoothing changes the tensors calibration observes). Bias correction's Conv input means come
// out of the calibration pass itself (CaptureRequest::channel_axis).
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <string>
#include <vector>

#include "ptqkit/calibration.h"
#include "runtime/channel_statistics.h"
#include "runtime/session.h"

namespace ptqkit {

// `tensor_axis`: tensor name -> channel axis (negative counts from the end). Tensors that are not
// float32 outputs of the main graph's nodes, or whose channel count changes between batches, are
// left out of the result. Sums run in a fixed order (deterministic for a given batch size).
// Throws ptqkit::Error (kRuntime) when ONNX Runtime cannot run the model.
std::map<std::string, ChannelStatistics> CaptureChannelStatistics(const onnx::ModelProto& model,
                                                                  const CalibrationSet& data,
                                                                  const std::map<std::string, int>& tensor_axis,
                                                                  int64_t batch_size, int64_t num_batches,
                                                                  const RuntimeOptions& runtime);

}  // namespace ptqkit
