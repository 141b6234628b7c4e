#include "scan/scan_options.h"

namespace ptqkit {

void UseQuantizeCalibration(const QuantizeOptions& from, SensitivityOptions& to) {
  to.onnx_path = from.onnx_path;
  to.calibration_data_path = from.calibration_data_path;
  if (from.calibration_tensors) to.calibration_tensors = &*from.calibration_tensors;
  to.synthetic_seed = from.synthetic_seed;
  if (!from.calibration_method.empty()) to.calibration_method = from.calibration_method;
  to.percentile = from.percentile;
  to.calibration_shapes = from.calibration_shapes;
  to.calibration_batch_size = from.calibration_batch_size;
  to.calibration_batch_axis = from.calibration_batch_axis;
  to.calibration_eps = from.calibration_eps;
  to.trt_plugins = from.trt_plugins;
  to.intra_op_num_threads = from.intra_op_num_threads;
  to.calibration_cache = from.calibration_cache;
  to.mask_input = from.eval_mask_input;
}

}  // namespace ptqkit
