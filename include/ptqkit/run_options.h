// SharedRunOptions: what a quantize run and a sensitivity scan share: the model, how the
// calibration data is read and batched, how activation ranges are calibrated, and where ONNX
// Runtime runs. QuantizeOptions and SensitivityOptions both derive from it, so a field declared
// here reaches both (the scan takes quantize's values with one copy: scan/scan_options.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ptqkit {

struct SharedRunOptions {
  std::string onnx_path;
  std::string calibration_data_path;  // .npy / .npz / folder; none: synthetic data (or tensors)
  uint64_t synthetic_seed = 0;
  double percentile = 99.999;  // for calibration_method percentile
  std::map<std::string, std::vector<int64_t>> calibration_shapes;  // input -> shape; axis 0 = batch
  int64_t calibration_batch_size = 0;                               // 0: from shapes / model / 1
  std::map<std::string, int64_t> calibration_batch_axis;           // input -> sample axis (else inferred)
  std::vector<std::string> calibration_eps = {"cpu"};
  std::vector<std::string> trt_plugins;
  int intra_op_num_threads = 0;
  std::string calibration_cache;  // read the CalibrationTable JSON from here instead of calibrating
};

}  // namespace ptqkit
