// Numerics: the plain scalar reference implementations of the quantized formats ptqkit writes,
// with ONNX semantics, matching ONNX Runtime's CPU kernels bit for bit (tests/cpp/quant/numerics_*test.cc check
// them against onnxruntime). Any faster path elsewhere must agree with these element for element.
//
//  - INT8, symmetric: q = saturate(round_half_even(x / scale)), zero point 0, range [-128, 127]
//    (ONNX saturates to the full int8 range; ptqkit's scales map amax to 127, so only values
//    beyond amax reach -128). The division is done in float32, as ONNX Runtime does (MLAS divides;
//    it does not multiply by a reciprocal, which would round differently).
//  - FLOAT8E4M3FN (opset >= 19): 1 sign, 4 exponent (bias 7), 3 mantissa bits, no infinities,
//    0x7F/0xFF are NaN, largest finite 448. Conversion rounds to nearest even, saturates to +-448
//    (ONNX's default saturate=1, also for +-Inf), keeps subnormals (multiples of 2^-9) and maps
//    NaN to 0x7F with the sign of the NaN (0xFF for a negative NaN).
//
// Free functions on values; stateless and thread-safe.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace ptqkit {

// Largest magnitudes the symmetric scales map amax to (scale = amax / max).
constexpr float kInt8QuantMax = 127.0f;
constexpr float kInt8ReducedRangeMax = 63.0f;  // 7-bit weights (reduce_range)
constexpr float kFloat8E4M3FNMax = 448.0f;

// Scale given to a tensor whose range is degenerate (amax 0, negative, NaN or Inf): 2^-14, the
// smallest normal float16, so the scale stays exact when a model is converted to float16. Any
// positive scale represents an all-zero tensor exactly; a small one keeps unexpected non-zero
// values small (they saturate at +-127 * 2^-14) instead of amplifying them.
constexpr float kDegenerateScale = 0x1p-14f;
// Smallest scale a positive amax can give: FLT_MIN (2^-126), so a scale is never zero or
// subnormal (amax / 127 underflows for amax below ~1.5e-36).
constexpr float kMinScale = 0x1p-126f;

// saturate(round_half_even(x / scale)) in [-128, 127]. NaN gives -128, as ONNX Runtime 1.30's
// CPU kernel does at every position (checked by numerics_ort_test; ONNX leaves it undefined).
// REQUIRES: scale > 0 and finite.
int8_t QuantizeInt8(float x, float scale);
// q * scale in float32.
float DequantizeInt8(int8_t q, float scale);

// float32 -> FLOAT8E4M3FN bits, saturating, round to nearest even (see above).
uint8_t FloatToFloat8E4M3FN(float x);
// FLOAT8E4M3FN bits -> float32 (exact); 0x7F and 0xFF give NaN.
float Float8E4M3FNToFloat(uint8_t bits);
// FloatToFloat8E4M3FN(x / scale), the division in float32. REQUIRES: scale > 0 and finite.
uint8_t QuantizeFloat8E4M3FN(float x, float scale);
// The FLOAT8E4M3FN value nearest to y >= 0, in double precision, saturating at 448 (ties to
// even): the FP8 grid as calibration's MSE search sees it (calib::Grid::nearest).
double NearestFloat8E4M3FN(double y);

// Quantize-then-dequantize, the values a constant weight's Q -> DQ pair hands its consumer:
// out[i] = Dequantize(Quantize(values[i], s), s) with s = scales[(i / inner) % channels]
// (channels = 1: one scale); `out` may be `values` (in place). Faster paths than the per-value
// functions above, equal to them element for element (NaN included). They assume the default
// rounding mode (to nearest). REQUIRES: every scale > 0 and finite; values and out hold `count` floats.
void FakeQuantizeInt8(const float* values, float* out, int64_t count, const float* scales, int64_t channels,
                      int64_t inner);
void FakeQuantizeFloat8E4M3FN(const float* values, float* out, int64_t count, const float* scales, int64_t channels,
                              int64_t inner);
// The stored bits alone, out[i] = Quantize(values[i], s) (QuantizeInt8's as a byte,
// QuantizeFloat8E4M3FN), with the same channel rule, equal element for element.
void QuantizeAllInt8(const float* values, int64_t count, const float* scales, int64_t channels, int64_t inner,
                     uint8_t* out);
void QuantizeAllFloat8E4M3FN(const float* values, int64_t count, const float* scales, int64_t channels, int64_t inner,
                             uint8_t* out);

// amax / qmax, for a per-tensor or per-channel scale of `tensor_name`. A degenerate amax
// (0, negative, NaN, Inf) gives kDegenerateScale, a scale below kMinScale is raised to it; both
// log a warning naming the tensor (unless `warn` is false: a second computation of the same scale).
// Never returns zero, a subnormal, Inf or NaN. REQUIRES: qmax > 0 and finite.
float ScaleFromAmax(float amax, float qmax, std::string_view tensor_name, bool warn = true);

// max |w| over every axis but `axis`, one value per index of `axis` (NaN ignored, Inf kept).
// `axis` may be negative (counted from the end, as in ONNX). Throws ptqkit::Error for an axis
// out of range or a negative dimension. REQUIRES: w holds the product of `shape` values.
std::vector<float> AbsMaxPerChannel(const float* w, const std::vector<int64_t>& shape, int axis);

// out[i] = QuantizeInt8(w[i], scales[channel of i along axis]). Throws ptqkit::Error when
// scales.size() != shape[axis] or the axis is out of range.
// REQUIRES: w and out hold the product of `shape` values; every scale > 0 and finite.
void QuantizeInt8PerChannel(const float* w, const std::vector<int64_t>& shape, int axis,
                            const std::vector<float>& scales, int8_t* out);

}  // namespace ptqkit
