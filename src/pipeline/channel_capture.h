// CaptureChannelStatistics: per-channel statistics of a few activation tensors of the main graph,
// in one streaming pass over the calibration batches (FP32 model, ONNX Runtime). What the
// weight-editing stages need and the per-tensor calibration table does not keep: the mean of each
// input channel of a quantized Conv (bias correction, quant/bias_correction.h) and the largest
// |x| per channel of a MatMul input (activation smoothing, quant/activation_smoothing.h).
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <string>
#include <vector>

#include "ptqkit/calibration.h"
#include "runtime/session.h"

namespace ptqkit {

struct ChannelStatistics {
  std::vector<double> sum;     // per channel, over every other axis and every sample
  std::vector<float> absmax;   // per channel, NaN ignored
  int64_t values_per_channel = 0;
  std::vector<int64_t> shape;  // of the last batch seen (a Conv's padding is judged on it)

  std::vector<double> Mean() const;
};

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
