// The one ranking order used everywhere (terminal ranking, picker, HTML report): score
// descending, ties broken by name ascending, so equal scores always list in the same order.
// Pure functions; thread-safe.
#pragma once

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace ptqkit::sensitivity {

// True when (a_score, a_name) ranks before (b_score, b_name). NaN ranks last, so sorting stays a
// strict weak order even on a broken score.
inline bool RanksBefore(double a_score, const std::string& a_name, double b_score,
                        const std::string& b_name) {
  const bool a_nan = std::isnan(a_score), b_nan = std::isnan(b_score);
  if (a_nan != b_nan) return b_nan;
  if (!a_nan && a_score != b_score) return a_score > b_score;
  return a_name < b_name;
}

inline std::vector<std::pair<std::string, double>> RankByScore(
    const std::map<std::string, double>& scores) {
  std::vector<std::pair<std::string, double>> ranked(scores.begin(), scores.end());
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    return RanksBefore(a.second, a.first, b.second, b.first);
  });
  return ranked;
}

}  // namespace ptqkit::sensitivity
