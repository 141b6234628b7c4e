// The autotune search: coordinate descent over region groups, from the placement rules' choice.
//
// Groups are visited most costly first (estimated multiply-accumulates); a group whose share of
// the cost is below what the timer can resolve (twice the default placement's relative MAD,
// clamped to 0.5%..2%) is not searched. For each visited group, its other schemes are tried one at a time
// against the incumbent placement: a candidate replaces the incumbent when its median latency is
// lower by more than the combined relative spread of both (at least 1%) and its divergence from
// FP32 stays within the limit — the accuracy budget, or without one the default placement's own
// divergence plus 10% (and 1e-6). A candidate that looks faster is timed again back to back with
// the incumbent before it is kept (machine load drifts between measurements far apart). Divergence is measured only for candidates that are faster. A scheme that keeps the
// same nodes in float as a placement already measured is not measured again. Changes that were
// faster but not by the margin are tried together at the end of each sweep (each alone can hide
// in the noise while together they are clear).
//
// The evaluation functions are the only contact with models and runtimes, so the search is a pure
// function of their answers (tests give it a cost model).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "autotune/regions.h"
#include "autotune/search_state.h"
#include "ptqkit/autotune.h"

namespace ptqkit::autotune {

struct SearchSettings {
  int schemes_per_region = 3;  // schemes tried per group, the rules' own included
  int max_groups = -1;         // groups searched, most costly first (-1: all)
  int passes = 1;
  double budget = -1.0;        // the accuracy budget (< 0: none; the default's divergence is the limit)
  bool verbose = false;
  std::vector<bool> tunable;   // per group; empty = all (false: --autotune_node_filter_list left it out)
  std::map<std::string, Scheme> warm_start;  // signature -> scheme from the pattern cache
};

struct Evaluation {
  // Latency of the FP32 model, and of the placement that keeps `in_float` in float.
  std::function<LatencySummary()> fp32_latency;
  std::function<LatencySummary(const std::vector<std::string>& in_float)> latency;
  std::function<double(const std::vector<std::string>& in_float)> divergence;
  std::function<void(int done, int total)> progress;  // optional
};

struct SearchResult {
  std::vector<Scheme> schemes;    // per group
  std::vector<std::string> why;   // per group
  std::vector<std::string> in_float;
  LatencySummary fp32, default_placement, best;
  double divergence_default = 0.0;
  double divergence_best = 0.0;
  double limit = 0.0;
  int timed = 0;
  int from_state = 0;
  int pruned = 0;
};

SearchResult SearchPlacement(const std::vector<RegionGroup>& groups, const SearchSettings& settings,
                             const Evaluation& evaluation, SearchState* state);

}  // namespace ptqkit::autotune
