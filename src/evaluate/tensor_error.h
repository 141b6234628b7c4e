// Likely culprits of a quantization loss: the quantized activations whose calibration histogram
// says they lose the most to their Q/DQ — E[(x - QDQ(x))^2] / E[x^2] with the amax actually used
// (rounding inside the range plus clipping beyond it, mse_search.h's error model), and the share
// of values beyond the amax. Only tensors with a histogram are estimated (`max` calibration keeps
// none, and clips nothing). Pure function.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "calib/calibration_table.h"
#include "calib/method.h"
#include "ptqkit/quantize.h"

namespace ptqkit::evaluate {

// The `top` tensors of `amax` with the largest relative error, largest first (ties by name).
std::vector<TensorClipping> LargestQuantizationErrors(const calib::CalibrationTable& table,
                                                      const std::map<std::string, float>& amax, calib::Grid grid,
                                                      size_t top);

}  // namespace ptqkit::evaluate
