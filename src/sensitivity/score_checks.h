// The scores the picker and the summary accept: finite, and non-negative after clamping.
// Metrics are >= 0 by construction, so a negative score is an upstream defect; it is clamped to 0
// (never excluded by default) with a warning rather than silently shifting the total mass.
// A NaN or infinite score cannot be ranked or summed: it is an error naming the target; so are
// finite scores whose sum overflows a double (the coverage would be NaN).
// Pure function; thread-safe.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace ptqkit::sensitivity {

// Returns the clamped scores; appends at most one warning (listing the clamped targets) to
// `warnings`. Throws ptqkit::Error naming the first non-finite target.
std::map<std::string, double> CheckedScores(const std::map<std::string, double>& scores,
                                            std::vector<std::string>& warnings);

}  // namespace ptqkit::sensitivity
