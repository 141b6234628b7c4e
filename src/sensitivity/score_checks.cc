#include "sensitivity/score_checks.h"

#include <fmt/format.h>

#include <cmath>

#include "ptqkit/error.h"
#include "sensitivity/scores_file.h"

namespace ptqkit::sensitivity {

std::map<std::string, double> CheckedScores(const std::map<std::string, double>& scores,
                                            std::vector<std::string>& warnings) {
  std::map<std::string, double> checked;
  std::vector<std::string> clamped;
  for (const auto& [name, score] : scores) {
    if (!std::isfinite(score)) {
      throw Error(fmt::format("score of '{}' is {}; scores must be finite numbers", name, score));
    }
    if (score < 0.0) clamped.push_back(fmt::format("'{}' ({})", name, score));
    checked.emplace(name, std::max(score, 0.0));
  }
  // The coverage mass is a sum: scores near the largest double (1.7e308, short of the NaN/Inf
  // marker, which is kept out of the mass) would overflow it to inf and the coverage to NaN.
  double total = 0.0;
  std::string largest;
  for (const auto& [name, score] : checked) {
    if (score >= kNonFiniteScore) continue;
    total += score;
    if (largest.empty() || score > checked.at(largest)) largest = name;
  }
  if (!std::isfinite(total)) {
    throw Error(fmt::format("the scores sum to more than the largest double (e.g. '{}' scores {}), so coverage "
                            "cannot be computed; scale the scores down",
                            largest, checked.at(largest)));
  }
  if (!clamped.empty()) {
    constexpr size_t kListed = 5;
    std::string list;
    for (size_t i = 0; i < clamped.size() && i < kListed; ++i) {
      list += (i ? ", " : "") + clamped[i];
    }
    if (clamped.size() > kListed) list += fmt::format(", and {} more", clamped.size() - kListed);
    warnings.push_back(fmt::format(
        "{} negative score(s) treated as 0 (sensitivity metrics are never negative): {}",
        clamped.size(), list));
  }
  return checked;
}

}  // namespace ptqkit::sensitivity
