// Seeded synthetic calibration data, for when the user gives none.
//
// Distribution (part of the tool's contract: the same seed gives the same data on every platform
// whose libm rounds log/sqrt/cos the same way, independent of the C++ standard library's
// <random> distributions, whose algorithms are implementation-defined):
//   - Sample r of input `name` comes from its own std::mt19937_64 (whose output sequence the C++
//     standard fixes), seeded with SplitMix64(SplitMix64(seed ^ FNV-1a-64(name)) + r). A sample's
//     values therefore depend only on (seed, name, r): not on batch size, reading order or the
//     other inputs, and batches can be generated on demand without holding all samples.
//   - Elements are filled in row-major order.
//   - float32/float64/float16/bfloat16: standard normal N(0, 1) by Box–Muller on pairs of draws,
//     u1 = ((x1 >> 11) + 1) * 2^-53 in (0, 1], u2 = (x2 >> 11) * 2^-53 in [0, 1),
//     z0 = sqrt(-2 ln u1) cos(2 pi u2), z1 = sqrt(-2 ln u1) sin(2 pi u2); an odd last element
//     uses z0 only. Narrower types round z (as a float32) to nearest even.
//   - integer types: x % 10, uniform in [0, 10) up to a bias of 2^-61.
//   - bool: the top bit of x.
// SyntheticArraySource is immutable; ReadRows is thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/array_source.h"

namespace ptqkit::data {

class SyntheticArraySource final : public ArraySource {
 public:
  // REQUIRES: shape.size() >= 1, all dims >= 0, dtype is a float, integer or bool type (else throws
  // ptqkit::Error naming `name`).
  SyntheticArraySource(DataType dtype, std::vector<int64_t> shape, std::string name, uint64_t seed);
  void ReadRows(int64_t begin, int64_t end, std::byte* out) const override;
  using ArraySource::ReadRows;

 private:
  std::string name_;
  uint64_t name_seed_;  // SplitMix64(seed ^ FNV-1a-64(name))
};

// Rounds to the nearest IEEE binary16 / bfloat16, ties to even; NaN stays NaN.
uint16_t FloatToHalfBits(float value);
uint16_t FloatToBFloat16Bits(float value);

}  // namespace ptqkit::data
