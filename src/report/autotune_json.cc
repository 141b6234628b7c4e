// The autotune part of the quantize report as JSON (--report_json's "autotune", Python's
// report["autotune"]).
#include "report/quantize_json.h"

namespace ptqkit {
namespace {

nlohmann::ordered_json LatencyToJson(const LatencySummary& s) {
  return {{"median_ms", s.median_ms}, {"p10_ms", s.p10_ms}, {"p90_ms", s.p90_ms}, {"mad_ms", s.mad_ms}, {"runs", s.runs}};
}

}  // namespace

nlohmann::ordered_json AutotuneReportToJson(const AutotuneReport& r) {
  nlohmann::ordered_json j;
  j["used"] = r.used;
  if (!r.used) return j;
  j["mode"] = r.mode;
  j["backend"] = r.backend;
  j["warmup_runs"] = r.warmup_runs;
  j["timing_runs"] = r.timing_runs;
  j["fp32"] = LatencyToJson(r.fp32);
  j["default_placement"] = LatencyToJson(r.default_placement);
  j["autotuned"] = LatencyToJson(r.autotuned);
  j["gate_fp32"] = LatencyToJson(r.gate_fp32);
  j["gate_autotuned"] = LatencyToJson(r.gate_autotuned);
  j["speedup_vs_fp32"] = r.speedup_vs_fp32;
  j["gate_passed"] = r.gate_passed;
  j["divergence_metric"] = r.divergence_metric;
  j["divergence_default"] = r.divergence_default;
  j["divergence_autotuned"] = r.divergence_autotuned;
  j["budget"] = r.budget;
  j["cost_source"] = r.cost_source;
  j["candidates_timed"] = r.candidates_timed;
  j["candidates_from_state"] = r.candidates_from_state;
  j["candidates_pruned"] = r.candidates_pruned;
  j["search_seconds"] = r.search_seconds;
  j["nodes_in_float"] = r.nodes_in_float;
  j["groups"] = nlohmann::ordered_json::array();
  for (const auto& g : r.groups) {
    j["groups"].push_back({{"signature", g.signature}, {"nodes", g.nodes}, {"regions", g.regions},
                           {"cost_share", g.cost_share}, {"scheme", g.scheme}, {"why", g.why}});
  }
  j["state_file"] = r.state_file;
  return j;
}

}  // namespace ptqkit
