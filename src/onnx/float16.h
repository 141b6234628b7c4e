// IEEE half-precision <-> float32 conversion (round to nearest even), used for FP16 weights and
// FP16 calibration data. Scalar reference code; exact for every input.
#pragma once

#include <cstdint>

namespace ptqkit {

float HalfToFloat(uint16_t bits);
uint16_t FloatToHalf(float value);

}  // namespace ptqkit
