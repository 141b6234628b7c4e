// CaptureStatistics: the one streaming calibration pass. It runs an in-memory copy of the model
// whose graph outputs are exactly the tensors to observe, feeds the calibration batches one at a
// time, and folds each captured tensor into its TensorStatistics before the next batch, so
// memory stays at one batch of activations whatever the number of samples.
#pragma once

#include <onnx/onnx_pb.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "calib/calibration_table.h"
#include "runtime/channel_statistics.h"
#include "ptqkit/calibration.h"
#include "runtime/session.h"

namespace ptqkit {

struct CaptureRequest {
  std::vector<std::string> tensors;  // activation tensors to observe
  bool histograms = true;            // false for max calibration (cheaper)
  // Main-graph tensors (any of them, observed or not) whose per-channel statistics are also kept,
  // with their channel axis: bias correction's Conv input means, in the same pass.
  std::map<std::string, int> channel_axis;
  int64_t batch_size = 1;
  int64_t num_batches = 0;  // 0: every batch, the last one possibly short
  // A shard's slice (`ptqkit calibrate --shard`): only batches [first_batch, end_batch), possibly
  // none. Statistics merge exactly, so the slices' tables merge into the whole run's table.
  bool sliced = false;
  int64_t first_batch = 0;
  int64_t end_batch = 0;
  std::function<void(int64_t, int64_t)> progress;
};

struct CaptureResult {
  calib::CalibrationTable table;
  std::vector<std::string> not_float;  // requested tensors ONNX Runtime says are not float tensors
  std::vector<std::string> providers;
  std::map<std::string, ChannelStatistics> channels;  // of request.channel_axis, folded per batch in order
  int64_t num_samples = 0;
};

// REQUIRES: `data` was validated against the model. Throws ptqkit::Error (kRuntime) when ONNX
// Runtime cannot load or run the model, naming its message.
CaptureResult CaptureStatistics(const onnx::ModelProto& model, const CalibrationSet& data, const CaptureRequest& request,
                                const RuntimeOptions& runtime);

}  // namespace ptqkit
