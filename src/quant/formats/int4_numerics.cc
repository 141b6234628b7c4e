#include "quant/formats/int4_numerics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "ptqkit/error.h"
#include "quant/formats/numerics.h"

namespace ptqkit {
namespace {

template <typename T>
std::string PackNibbles(const std::vector<T>& values) {
  std::string bytes((values.size() + 1) / 2, '\0');
  for (size_t i = 0; i < values.size(); ++i) {
    const auto nibble = static_cast<uint8_t>(static_cast<uint8_t>(values[i]) & 0x0f);
    bytes[i / 2] = static_cast<char>(static_cast<uint8_t>(bytes[i / 2]) | (i % 2 ? nibble << 4 : nibble));
  }
  return bytes;
}

uint8_t NibbleAt(std::string_view bytes, int64_t i) {
  const auto byte = static_cast<uint8_t>(bytes[static_cast<size_t>(i / 2)]);
  return i % 2 ? byte >> 4 : byte & 0x0f;
}

}  // namespace

std::string PackInt4(const std::vector<int8_t>& values) { return PackNibbles(values); }
std::string PackUint4(const std::vector<uint8_t>& values) { return PackNibbles(values); }

std::vector<int8_t> UnpackInt4(std::string_view bytes, int64_t count) {
  std::vector<int8_t> out(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    const int nibble = NibbleAt(bytes, i);
    out[static_cast<size_t>(i)] = static_cast<int8_t>(nibble >= 8 ? nibble - 16 : nibble);
  }
  return out;
}

std::vector<uint8_t> UnpackUint4(std::string_view bytes, int64_t count) {
  std::vector<uint8_t> out(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) out[static_cast<size_t>(i)] = NibbleAt(bytes, i);
  return out;
}

std::vector<int64_t> BlockedLayout::ScaleShape(const std::vector<int64_t>& shape, int axis) const {
  std::vector<int64_t> s = shape;
  s[static_cast<size_t>(axis)] = num_blocks();
  return s;
}

BlockedLayout MakeBlockedLayout(const std::vector<int64_t>& shape, int axis, int64_t block_size) {
  const int rank = static_cast<int>(shape.size());
  if (axis < 0 || axis >= rank) {
    throw Error(fmt::format("blocked axis {} is out of range for a rank-{} tensor", axis, rank));
  }
  if (block_size == 0 || block_size < -1) {
    throw Error(fmt::format("--block_size must be positive or -1 (one block per channel), got {}", block_size));
  }
  BlockedLayout layout;
  for (int d = 0; d < rank; ++d) {
    if (shape[d] < 0) throw Error(fmt::format("blocked quantization needs a static shape, got dimension {} = {}", d, shape[d]));
    if (d < axis) layout.outer *= shape[d];
    if (d == axis) layout.k = shape[d];
    if (d > axis) layout.inner *= shape[d];
  }
  // A block longer than K is one block of K (ONNX allows it; the scale axis has length 1).
  layout.block = block_size == -1 ? std::max<int64_t>(layout.k, 1) : std::min(block_size, std::max<int64_t>(layout.k, 1));
  return layout;
}

Int4BlockParams BlockParams(const float* w, int64_t stride, int64_t n, float alpha, bool zero_point, float min_scale) {
  // Range widened to include 0 (asymmetric) and NaN skipped (comparisons with NaN are false).
  float lo = 0.0f, hi = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    const float v = w[i * stride];
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
  }
  // A block of zeros (or with an infinity) gets the degenerate scale, which any later float16
  // conversion keeps exact; zero point 0 maps 0 to 0 in both formats.
  Int4BlockParams p;
  const float range = zero_point ? hi - lo : std::max(-lo, hi);
  if (!(std::isfinite(range) && range > 0.0f)) {
    p.scale = kDegenerateScale;
    return p;
  }
  const float qmax = static_cast<float>(zero_point ? kUint4Max : kInt4Max);
  p.scale = std::max(range * alpha / qmax, min_scale);
  if (zero_point) {
    p.zero_point = static_cast<uint8_t>(RoundClamped(-lo * alpha / p.scale, 0.0f, static_cast<float>(kUint4Max)));
  }
  return p;
}

std::vector<float> DequantizeBlocked(const std::vector<int>& q, const std::vector<float>& scales,
                                     const std::vector<int>& zero_points, const BlockedLayout& layout) {
  std::vector<float> out(q.size());
  const int64_t nb = layout.num_blocks();
  for (int64_t o = 0; o < layout.outer; ++o) {
    for (int64_t j = 0; j < layout.k; ++j) {
      for (int64_t i = 0; i < layout.inner; ++i) {
        const auto e = static_cast<size_t>((o * layout.k + j) * layout.inner + i);
        const auto s = static_cast<size_t>((o * nb + j / layout.block) * layout.inner + i);
        const int zp = zero_points.empty() ? 0 : zero_points[s];
        out[e] = static_cast<float>(q[e] - zp) * scales[s];
      }
    }
  }
  return out;
}

}  // namespace ptqkit
