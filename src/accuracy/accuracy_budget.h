// Accuracy budget (issue 9 item 2): the fewest nodes kept in float such that the quantized model's
// divergence from FP32 on the held-out samples is within the user's budget.
//
// The nodes come from one sensitivity scan (node granularity), most sensitive first; the search
// then evaluates the real quantized model with the top k of that ranking excluded: k = 1, 2, 4, ...
// until one meets the budget, then bisection between the last k that missed and the first that
// met it. That needs about 2*log2(k*) full evaluations instead of one per node, assuming the
// divergence mostly falls as k grows (it is measured, never assumed: the answer is always a k
// whose model was evaluated and met the budget, or the whole ranking excluded when none did).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ptqkit/quantize.h"

namespace ptqkit::accuracy {

// Divergence of the model quantized with the first `k` nodes of the ranking kept in float.
using EvaluateCut = std::function<double(int64_t k)>;

// REQUIRES: budget >= 0; ranking_size >= 0. `divergence_at_0` is the full quantization's.
// Returns the search's report (curve in evaluation order, chosen k in excluded_nodes.size()
// after the caller fills names).
AccuracyBudgetReport SearchCut(int64_t ranking_size, double budget, double divergence_at_0,
                               const EvaluateCut& evaluate);

}  // namespace ptqkit::accuracy
