#include "scan/settling.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "ptqkit/picker.h"

namespace ptqkit {

std::vector<std::string> SettledTargets(const std::vector<TargetEstimate>& targets) {
  std::vector<size_t> order(targets.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return targets[a].mean > targets[b].mean; });
  std::vector<std::string> reasons(targets.size());
  double mass = 0.0, mean_mass = 0.0;
  for (const auto& t : targets) {
    mass += std::max(t.low, 0.0);
    mean_mass += std::max(t.mean, 0.0);
  }
  // The default picker's cut, between the last target it excludes and the next (by the means).
  double cut = -1.0, excluded = 0.0;
  for (size_t r = 0; r < order.size() && mean_mass > 0.0; ++r) {
    const double m = std::max(targets[order[r]].mean, 0.0);
    if (excluded + m > PickerOptions().coverage * mean_mass) {
      cut = r == 0 ? m : 0.5 * (m + std::max(targets[order[r - 1]].mean, 0.0));
      break;
    }
    excluded += m;
  }
  for (size_t r = 0; r < order.size(); ++r) {
    const TargetEstimate& t = targets[order[r]];
    if (!t.active || t.samples < kMinSettleSamples) continue;
    const bool above_clear = r == 0 || targets[order[r - 1]].low > t.high;
    const bool below_clear = r + 1 == order.size() || targets[order[r + 1]].high < t.low;
    if (above_clear && below_clear) {
      reasons[order[r]] = "separated";
    } else if (t.high - t.low <= 2.0 * kPreciseFraction * std::fabs(t.mean)) {
      reasons[order[r]] = "precise";
    } else if (mass > 0.0 && t.high < kNegligibleShare * mass) {
      reasons[order[r]] = "negligible";
    } else if (cut > 0.0 && (t.low > cut || t.high < cut)) {
      reasons[order[r]] = "decided";
    }
  }
  return reasons;
}

}  // namespace ptqkit
