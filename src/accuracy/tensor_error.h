// Likely culprits of a quantization loss: the quantized activations whose calibration histogram
// says they lose the most to their Q/DQ — the mean over nonzero values of |x - QDQ(x)| / |x| with
// the amax actually used, so both failure modes count: values clipped beyond the amax, and values
// that round to zero because a few large ones set the scale (an energy-weighted error misses the
// second: the large values dominate it). Also the share of values beyond the amax. Only tensors
// with a histogram are estimated (`max` calibration keeps none). Pure function.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "calib/calibration_table.h"
#include "calib/method.h"
#include "ptqkit/quantize.h"

namespace ptqkit::accuracy {

// The `top` tensors of `amax` with the largest relative error, largest first (ties by name).
std::vector<TensorClipping> LargestQuantizationErrors(const calib::CalibrationTable& table,
                                                      const std::map<std::string, float>& amax, calib::Grid grid,
                                                      size_t top);

}  // namespace ptqkit::accuracy
