// Padding masks (--eval_mask_input): a [batch, sequence] input that is 0 at padded positions, as a
// token model's attention_mask. Zeroing those positions in both models' outputs makes them agree
// there exactly, so every comparison (the loss report, the accuracy budget, sensitivity scores)
// reads the real positions only, as a task metric over real tokens does.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ptqkit/tensor.h"

namespace ptqkit::sensitivity {

struct PaddingMask {
  std::vector<int64_t> shape;  // [batch, sequence]
  std::vector<bool> padded;    // per position, row-major

  // The mask input `name` of one batch. Throws ptqkit::Error naming --eval_mask_input when the
  // batch has no such input or it is not [batch, sequence].
  static PaddingMask Of(const std::map<std::string, HostTensor>& inputs, const std::string& name);
  // Zeroes the padded positions of `t` when it is shaped [batch, sequence, ...]; else leaves it.
  void Apply(HostTensor* t) const;
};

}  // namespace ptqkit::sensitivity
