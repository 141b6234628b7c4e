#include "autotune/placement_search.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "base/log.h"
#include "base/progress.h"

namespace ptqkit::autotune {
namespace {

constexpr double kNoBudgetSlack = 1.1;
constexpr double kNoBudgetFloor = 1e-6;  // divergences this small are rounding, not accuracy

double RelativeSpread(const LatencySummary& s) { return s.median_ms > 0 ? s.mad_ms / s.median_ms : 0.0; }

class Search {
 public:
  Search(const std::vector<RegionGroup>& groups, const SearchSettings& settings, const Evaluation& evaluation,
         SearchState* state)
      : groups_(groups), settings_(settings), eval_(evaluation), state_(state) {}

  SearchResult Run() {
    MeasureRulesPlacement();
    LatencySummary incumbent = WarmStart();
    const std::vector<size_t> order = SearchOrder();
    total_ = 0;
    for (size_t g : order) total_ += std::min<int>(settings_.schemes_per_region, groups_[g].schemes.size()) - 1;
    total_ *= settings_.passes;
    progress::Stage stage("autotune", "candidates", total_);
    for (int pass = 0; pass < settings_.passes; ++pass) {
      bool changed = false;
      // Changes that were faster, but not by the margin: on a runtime where every group adds a
      // little overhead (Q/DQ nodes that no kernel fuses), each alone hides in the noise while
      // together they are clear. They are tried together at the end of the pass.
      Marginal marginal;
      for (size_t g : order) {
        changed |= TryGroup(g, pass, &incumbent, &marginal, &stage);
        if (result_.why[g].empty() || pass > 0) result_.why[g] = "searched";
      }
      if (marginal.size() >= 2 && TryTogether(marginal, &incumbent)) changed = true;
      if (!changed) break;
    }
    result_.best = incumbent;
    result_.in_float = InFloat(result_.schemes);
    result_.divergence_best = result_.in_float.empty() ? result_.divergence_default
                                                       : Divergence(SearchState::Key(result_.in_float), result_.in_float);
    return result_;
  }

 private:
  using Marginal = std::map<size_t, std::pair<Scheme, double>>;  // group -> (scheme, median)

  // FP32 and the rules' placement: their latency, the rules' divergence and the accuracy limit.
  void MeasureRulesPlacement() {
    result_.schemes.assign(groups_.size(), Scheme::kQuantize);
    result_.why.assign(groups_.size(), "");
    result_.fp32 = Latency("fp32", {});
    result_.default_placement = Latency(SearchState::Key({}), {});
    result_.divergence_default = Divergence(SearchState::Key({}), {});
    // Without a budget: no more than 10% above the rules' placement's own divergence. Keeping
    // nodes in float usually lowers it, but not always by a hair (errors of two layers can cancel),
    // and a limit of exactly the default's would turn measurement-level differences into vetoes.
    result_.limit = settings_.budget >= 0 ? std::max(settings_.budget, result_.divergence_default)
                                          : result_.divergence_default * kNoBudgetSlack + kNoBudgetFloor;
  }

  // The pattern cache's decisions are taken as they are, then checked like any candidate. Returns
  // the incumbent's latency.
  LatencySummary WarmStart() {
    std::vector<Scheme> start = result_.schemes;
    for (size_t g = 0; g < groups_.size(); ++g) {
      auto it = settings_.warm_start.find(groups_[g].signature);
      if (it != settings_.warm_start.end() &&
          std::find(groups_[g].schemes.begin(), groups_[g].schemes.end(), it->second) != groups_[g].schemes.end()) {
        start[g] = it->second;
      }
    }
    LatencySummary incumbent = result_.default_placement;
    if (start == result_.schemes) return incumbent;
    const auto in_float = InFloat(start);
    const LatencySummary l = Latency(SearchState::Key(in_float), in_float);
    if (Faster(l, incumbent) && Divergence(SearchState::Key(in_float), in_float) <= result_.limit) {
      result_.schemes = start;
      for (size_t g = 0; g < groups_.size(); ++g) {
        if (start[g] != Scheme::kQuantize) result_.why[g] = "from the pattern cache";
      }
      return l;
    }
    log::Info("autotune: the pattern cache's placement is not faster here; searching from the rules' placement");
    return incumbent;
  }

  // The groups searched, in order; the others get the reason they are not. A group whose whole
  // cost is below the timer's resolution cannot show a change alone; but noisy timings must not
  // rule out every group (the marginal changes are tried together), so the threshold stays between
  // 0.5% and 2% of the cost.
  std::vector<size_t> SearchOrder() {
    double total_cost = 0.0;
    for (const auto& g : groups_) total_cost += g.cost;
    const double min_share = std::clamp(2.0 * RelativeSpread(result_.default_placement), 0.005, 0.02);
    std::vector<size_t> order;
    int searched = 0;
    for (size_t g = 0; g < groups_.size(); ++g) {
      const double share = total_cost > 0 ? groups_[g].cost / total_cost : 0.0;
      if (!settings_.tunable.empty() && !settings_.tunable[g]) {
        result_.why[g] = "not tuned (no node matches --autotune_node_filter_list)";
      } else if (!result_.why[g].empty()) {
        // decided by the pattern cache
      } else if (share < min_share) {
        result_.why[g] = fmt::format("not tuned ({:.2f}% of the cost, below what the timer resolves)", 100 * share);
        result_.pruned += static_cast<int>(groups_[g].schemes.size()) - 1;
      } else if (settings_.max_groups >= 0 && searched >= settings_.max_groups) {
        result_.why[g] = "not tuned (beyond --autotune_max_groups)";
      } else {
        order.push_back(g);
        ++searched;
      }
    }
    return order;
  }

  // Group g's other schemes, each tried against the incumbent; returns whether one was kept.
  bool TryGroup(size_t g, int pass, LatencySummary* incumbent, Marginal* marginal, progress::Stage* stage) {
    bool changed = false;
    const auto& schemes = groups_[g].schemes;
    const int tries = std::min<int>(settings_.schemes_per_region, schemes.size());
    for (int s = 0; s < tries; ++s) {
      if (schemes[s] == result_.schemes[g]) continue;
      std::vector<Scheme> candidate = result_.schemes;
      candidate[g] = schemes[s];
      const auto in_float = InFloat(candidate);
      const std::string key = SearchState::Key(in_float);
      ++done_;
      if (seen_.count(key)) {  // the same float nodes as a placement already judged in this run
        ++result_.pruned;
        continue;
      }
      const LatencySummary l = Latency(key, in_float);
      bool kept = false;
      double divergence = -1.0;
      if (Faster(l, *incumbent) && Confirmed(result_.schemes, candidate)) {
        divergence = Divergence(key, in_float);
        kept = divergence <= result_.limit;
      }
      const std::string verdict = kept ? "kept" : divergence >= 0 ? "over the accuracy limit" : "not faster";
      const auto message = fmt::format("autotune: group {} ({} region(s), {}): {} -> {:.3f} ms (p10 {:.3f}, p90 "
                                       "{:.3f}) vs {:.3f} ms: {}",
                                       g + 1, groups_[g].regions.size(),
                                       settings_.verbose ? groups_[g].signature : Short(groups_[g].signature),
                                       SchemeName(schemes[s]), l.median_ms, l.p10_ms, l.p90_ms, incumbent->median_ms,
                                       verdict);
      log::Info("{} [{}/{}]", message, std::min(done_, total_), total_);
      if (eval_.progress) eval_.progress(std::min(done_, total_), total_);
      stage->Set(std::min(done_, total_), fmt::format("pass {}, group {} of {}", pass + 1, g + 1, groups_.size()));
      if (kept) {
        result_.schemes = candidate;
        *incumbent = l;
        changed = true;
        marginal->erase(g);
      } else if (divergence < 0 && l.median_ms < incumbent->median_ms &&
                 (!marginal->count(g) || l.median_ms < (*marginal)[g].second)) {
        (*marginal)[g] = {schemes[s], l.median_ms};
      }
    }
    return changed;
  }

  static std::string Short(const std::string& sig) { return sig.size() > 60 ? sig.substr(0, 57) + "..." : sig; }

  // The incumbent with every marginal change applied, kept under the same rules as one change.
  bool TryTogether(const Marginal& marginal, LatencySummary* incumbent) {
    std::vector<Scheme> candidate = result_.schemes;
    for (const auto& [g, change] : marginal) candidate[g] = change.first;
    const auto in_float = InFloat(candidate);
    const std::string key = SearchState::Key(in_float);
    if (seen_.count(key)) return false;
    const LatencySummary l = Latency(key, in_float);
    const bool kept =
        Faster(l, *incumbent) && Confirmed(result_.schemes, candidate) && Divergence(key, in_float) <= result_.limit;
    log::Info("autotune: {} marginal change(s) together -> {:.3f} ms (p10 {:.3f}, p90 {:.3f}) vs {:.3f} ms: {}",
              marginal.size(), l.median_ms, l.p10_ms, l.p90_ms, incumbent->median_ms, kept ? "kept" : "not kept");
    if (!kept) return false;
    result_.schemes = candidate;
    *incumbent = l;
    return true;
  }

  // A candidate that looked faster is timed again right after the incumbent: the load of a shared
  // machine changes between measurements minutes apart, not between two back to back. Kept in the
  // state file like any timing.
  bool Confirmed(const std::vector<Scheme>& incumbent, const std::vector<Scheme>& candidate) {
    const auto inc_float = InFloat(incumbent);
    const auto cand_float = InFloat(candidate);
    const std::string key = "confirm:" + SearchState::Key(inc_float) + ">" + SearchState::Key(cand_float);
    const LatencySummary a = Latency(key + ":incumbent", inc_float);
    const LatencySummary b = Latency(key + ":candidate", cand_float);
    const bool faster = Faster(b, a);
    if (!faster) {
      log::Info("autotune: not confirmed when timed back to back with the incumbent ({:.3f} vs {:.3f} ms)", b.median_ms,
                a.median_ms);
    }
    return faster;
  }

  bool Faster(const LatencySummary& candidate, const LatencySummary& incumbent) const {
    const double margin = std::max(0.01, RelativeSpread(candidate) + RelativeSpread(incumbent));
    return candidate.median_ms * (1.0 + margin) < incumbent.median_ms;
  }

  std::vector<std::string> InFloat(const std::vector<Scheme>& schemes) const {
    std::vector<std::string> nodes;
    for (size_t g = 0; g < groups_.size(); ++g) {
      for (auto& n : NodesInFloat(groups_[g], schemes[g])) nodes.push_back(std::move(n));
    }
    std::sort(nodes.begin(), nodes.end());
    return nodes;
  }

  LatencySummary Latency(const std::string& key, const std::vector<std::string>& in_float) {
    seen_.insert(key);
    if (const CandidateRecord* r = state_->Find(key); r && r->latency) {
      ++result_.from_state;
      return *r->latency;
    }
    const LatencySummary l = key == "fp32" ? eval_.fp32_latency() : eval_.latency(in_float);
    ++result_.timed;
    state_->PutLatency(key, l);
    return l;
  }

  double Divergence(const std::string& key, const std::vector<std::string>& in_float) {
    if (const CandidateRecord* r = state_->Find(key); r && r->divergence) return *r->divergence;
    const double d = eval_.divergence(in_float);
    state_->PutDivergence(key, d);
    return d;
  }

  const std::vector<RegionGroup>& groups_;
  const SearchSettings& settings_;
  const Evaluation& eval_;
  SearchState* state_;
  SearchResult result_;
  std::set<std::string> seen_;
  int done_ = 0;   // candidates tried, for the progress line
  int total_ = 0;  // candidates the passes may try
};

}  // namespace

SearchResult SearchPlacement(const std::vector<RegionGroup>& groups, const SearchSettings& settings,
                             const Evaluation& evaluation, SearchState* state) {
  return Search(groups, settings, evaluation, state).Run();
}

}  // namespace ptqkit::autotune
