#include "scan/scan_options.h"

namespace ptqkit {

void UseQuantizeCalibration(const QuantizeOptions& from, SensitivityOptions& to) {
  static_cast<SharedRunOptions&>(to) = from;  // every shared field, declared once (ptqkit/run_options.h)
  // The three that differ in form: tensors held vs pointed to, an empty method meaning the mode's
  // default, and the mask's name.
  if (from.calibration_tensors) to.calibration_tensors = &*from.calibration_tensors;
  if (!from.calibration_method.empty()) to.calibration_method = from.calibration_method;
  to.mask_input = from.eval_mask_input;
}

}  // namespace ptqkit
