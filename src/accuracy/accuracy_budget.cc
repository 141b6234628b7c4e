#include "accuracy/accuracy_budget.h"

#include <fmt/format.h>

#include "base/log.h"
#include "base/progress.h"

namespace ptqkit::accuracy {

AccuracyBudgetReport SearchCut(int64_t ranking_size, double budget, double divergence_at_0,
                               const EvaluateCut& evaluate) {
  AccuracyBudgetReport r;
  r.used = true;
  r.budget = budget;
  r.ranked_nodes = ranking_size;
  r.curve.emplace_back(0, divergence_at_0);
  if (divergence_at_0 <= budget) {
    r.met = true;
    return r;
  }
  // Galloping then bisection: at most about 2 log2(n) + 1 evaluations.
  int64_t bound = 1;
  for (int64_t n = 1; n < ranking_size; n *= 2) bound += 2;
  progress::Stage stage("accuracy budget", "evaluations", bound);
  const auto measure = [&](int64_t k) {
    stage.Set(r.evaluations, fmt::format("trying {} node(s) in float", k));
    const double d = evaluate(k);
    ++r.evaluations;
    r.curve.emplace_back(k, d);
    log::Info("accuracy budget: {} node(s) in float -> divergence {:.6g} (budget {:.6g})", k, d, budget);
    return d <= budget;
  };
  // Galloping: the first power of two (or the whole ranking) that meets the budget.
  int64_t missed = 0, met = -1;
  for (int64_t k = 1; ranking_size > 0; k = std::min(ranking_size, k * 2)) {
    if (measure(k)) {
      met = k;
      break;
    }
    missed = k;
    if (k == ranking_size) break;
  }
  if (met < 0) {  // not even the whole ranking in float meets it: the caller keeps it all in float
    r.excluded_nodes.resize(static_cast<size_t>(ranking_size));
    return r;
  }
  // Bisection in (missed, met].
  while (met - missed > 1) {
    const int64_t mid = missed + (met - missed) / 2;
    if (measure(mid)) met = mid;
    else missed = mid;
  }
  r.met = true;
  r.excluded_nodes.resize(static_cast<size_t>(met));  // names filled in by the caller
  return r;
}

}  // namespace ptqkit::accuracy
