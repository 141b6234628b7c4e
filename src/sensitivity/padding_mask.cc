#include "sensitivity/padding_mask.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>

#include "ptqkit/error.h"

namespace ptqkit::sensitivity {

PaddingMask PaddingMask::Of(const std::map<std::string, HostTensor>& inputs, const std::string& name) {
  const auto it = inputs.find(name);
  if (it == inputs.end()) throw Error(fmt::format("--eval_mask_input: the model has no input '{}'", name));
  const HostTensor& mask = it->second;
  if (mask.shape.size() != 2) {
    throw Error(fmt::format("--eval_mask_input: input '{}' has shape {}; a padding mask is [batch, sequence]", name,
                            ShapeToString(mask.shape)));
  }
  PaddingMask m;
  m.shape = mask.shape;
  const int64_t positions = mask.NumElements();
  const size_t element = positions > 0 ? mask.bytes.size() / static_cast<size_t>(positions) : 0;
  m.padded.resize(static_cast<size_t>(positions));
  for (int64_t p = 0; p < positions; ++p) {  // all bytes zero: padding (ints, bool and float alike)
    const std::byte* e = mask.bytes.data() + static_cast<size_t>(p) * element;
    m.padded[static_cast<size_t>(p)] = std::all_of(e, e + element, [](std::byte v) { return v == std::byte{0}; });
  }
  return m;
}

void PaddingMask::Apply(HostTensor* t) const {
  const size_t positions = padded.size();
  if (positions == 0 || t->shape.size() < 2 || t->shape[0] != shape[0] || t->shape[1] != shape[1]) return;
  const size_t per_position = t->bytes.size() / positions;
  for (size_t p = 0; p < positions; ++p) {
    if (padded[p]) std::fill_n(t->bytes.begin() + static_cast<std::ptrdiff_t>(p * per_position), per_position, std::byte{0});
  }
}

}  // namespace ptqkit::sensitivity
