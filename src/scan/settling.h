// When a probe has seen enough samples (--stop_when_settled). Each target's score is a mean over
// samples; its interval is the mean ± kIntervalZ standard errors (ScoreAccumulator::StandardError,
// an upper bound over outputs). Among the targets ranked by mean, a target is settled when
//  - "separated": its interval overlaps neither neighbour's, so more samples would not change its
//    place (with the interval's confidence), or
//  - "precise": its interval is within ±kPreciseFraction of its mean (or empty): its size is
//    known, and a neighbour still overlapping it is a near-tie, which the picker treats as one;
//  - "negligible": even its upper bound is under kNegligibleShare of the total score mass (the sum
//    of every target's lower bound): no coverage cut up to 1 - kNegligibleShare reaches it, so
//    its order among the other negligible targets is not worth more samples;
//  - "decided": its interval lies wholly on one side of the default picker's cut (`ptqkit exclude`
//    at its default PickerOptions::coverage, placed between the last target it excludes and the next, by the
//    means): the picker's default decision for it would not change with more samples;
// and only after kMinSettleSamples samples (small samples underestimate the spread).
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ptqkit {

inline constexpr double kIntervalZ = 3.0;
inline constexpr double kPreciseFraction = 0.05;
inline constexpr double kNegligibleShare = 0.001;
inline constexpr int64_t kMinSettleSamples = 64;
// Samples per chunk when settling: a check after each. Every chunk builds each active probe's session
// again, so chunks smaller than the minimum only add session start-ups.
inline constexpr int64_t kSettleChunkSamples = 64;

struct TargetEstimate {
  double mean = 0.0;
  double low = 0.0, high = 0.0;  // the interval
  int64_t samples = 0;
  bool active = false;  // still sampling (only active targets can settle)
};

// The reason each active target is settled ("separated" / "precise"), "" where it is not. Inactive
// targets (settled before) still count as neighbours.
std::vector<std::string> SettledTargets(const std::vector<TargetEstimate>& targets);

}  // namespace ptqkit
