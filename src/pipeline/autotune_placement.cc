#include "pipeline/autotune_placement.h"

#include <fmt/format.h>
#include <fnmatch.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <set>

#include "autotune/latency_backend.h"
#include "autotune/node_profile.h"
#include "autotune/placement_search.h"
#include "autotune/presets.h"
#include "autotune/regions.h"
#include "autotune/search_state.h"
#include "base/digest.h"
#include "base/log.h"
#include "base/temporary_folder.h"
#include "onnx/onnx_library.h"
#include "ptqkit/error.h"

namespace ptqkit {
namespace fs = std::filesystem;
namespace {

// What makes two runs' candidates the same: the model and every option that changes a
// candidate's graph, scales or timing.
std::string Fingerprint(const onnx::ModelProto& fp32, const QuantizeOptions& o, const autotune::Settings& s) {
  Digest d;
  std::string bytes;
  fp32.SerializeToString(&bytes);
  d.Update(bytes);
  const AutotuneOptions& a = o.autotune;
  d.Update(fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", o.quantize_mode, o.calibration_method,
                       o.calibration_data_path, o.num_synthetic_samples, o.synthetic_seed, o.percentile, o.eval_samples,
                       o.dq_only, o.target_runtime, o.reduce_range, o.high_precision_dtype, o.accuracy_budget_metric,
                       s.backend, s.warmup_runs, s.timing_runs));
  d.Update(fmt::format("{}|{}|{}|{}|{}", a.threads, a.trtexec_args, fmt::join(o.nodes_to_exclude, ","),
                       fmt::join(o.op_types_to_exclude, ","), fmt::join(o.nodes_to_quantize, ",")));
  d.Update(fmt::format("{}|{}", fmt::join(o.op_types_to_quantize, ","), fmt::join(o.calibration_eps, ",")));
  return d.Hex();
}

bool MatchesFilter(const autotune::Region& r, const std::vector<std::string>& patterns) {
  for (const auto& p : patterns) {
    for (const auto& n : r.quantized_nodes) {
      if (::fnmatch(p.c_str(), n.c_str(), 0) == 0) return true;
    }
    for (const auto& n : r.tail_nodes) {
      if (::fnmatch(p.c_str(), n.c_str(), 0) == 0) return true;
    }
  }
  return false;
}

LatencySummary MedianOfRounds(const std::vector<LatencySummary>& rounds) {
  const auto median = [&](double LatencySummary::*field) {
    std::vector<double> v;
    for (const auto& r : rounds) v.push_back(r.*field);
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  LatencySummary s;
  s.median_ms = median(&LatencySummary::median_ms);
  s.p10_ms = median(&LatencySummary::p10_ms);
  s.p90_ms = median(&LatencySummary::p90_ms);
  s.mad_ms = median(&LatencySummary::mad_ms);
  for (const auto& r : rounds) s.runs += r.runs;
  return s;
}

// FP32 and the chosen placement, timed alternately: whatever the machine does meanwhile hits
// both alike. Kept in the state file, so a repeated run decides the same without timing.
void FinalGate(const std::vector<std::string>& in_float, const AutotuneInputs& in, autotune::LatencyBackend* backend,
               autotune::SearchState* state, AutotuneReport* rep) {
  constexpr int kRounds = 3;
  const std::string key = "gate:" + autotune::SearchState::Key(in_float);
  const autotune::CandidateRecord* fp32 = state->Find(key + ":fp32");
  const autotune::CandidateRecord* best = state->Find(key + ":autotuned");
  if (fp32 && fp32->latency && best && best->latency) {
    rep->gate_fp32 = *fp32->latency;
    rep->gate_autotuned = *best->latency;
    return;
  }
  const onnx::ModelProto chosen = in.build(in_float);
  std::vector<LatencySummary> a, b;
  for (int i = 0; i < kRounds; ++i) {
    a.push_back(backend->Measure(*in.fp32));
    b.push_back(backend->Measure(chosen));
  }
  rep->gate_fp32 = MedianOfRounds(a);
  rep->gate_autotuned = MedianOfRounds(b);
  state->PutLatency(key + ":fp32", rep->gate_fp32);
  state->PutLatency(key + ":autotuned", rep->gate_autotuned);
}

}  // namespace

namespace {

// The latency backend, first: a GPU backend that cannot run here stops the run before any search.
std::unique_ptr<autotune::LatencyBackend> MakeBackend(const autotune::Settings& settings, const AutotuneOptions& a,
                                                      const AutotuneInputs& in, std::optional<TemporaryFolder>* work) {
  autotune::BackendRequest request;
  request.backend = settings.backend;
  request.warmup_runs = settings.warmup_runs;
  request.timing_runs = settings.timing_runs;
  request.threads = a.threads;
  request.trtexec_args = a.trtexec_args;
  request.timing_cache = a.timing_cache;
  request.feeds = in.feeds;
  if (settings.backend == "tensorrt") {
    work->emplace("ptqkit-autotune-");
    request.work_dir = (*work)->path();
  }
  return autotune::MakeLatencyBackend(request);
}

// Regions over the main graph with inferred shapes (for costs and signatures), filtered by
// --autotune_node_filter_list.
std::vector<autotune::Region> SearchedRegions(const AutotuneInputs& in, const AutotuneOptions& a,
                                              const std::vector<std::string>& quantized) {
  onnx::ModelProto shaped = *in.fp32;
  const onnx::ModelProto inferred = onnxio::InferShapes(&shaped);
  std::vector<autotune::Region> regions = autotune::BuildRegions(inferred, quantized);
  if (a.node_filter_list.empty()) return regions;
  std::vector<autotune::Region> kept;
  for (auto& r : regions) {
    if (MatchesFilter(r, a.node_filter_list)) kept.push_back(std::move(r));
  }
  log::Info("autotune: {} of {} region(s) match --autotune_node_filter_list; the others keep the rules' placement",
            kept.size(), regions.size());
  if (kept.empty()) log::Warn("autotune: no region matches --autotune_node_filter_list; nothing is tuned");
  return kept;
}

// The state file and the pattern cache: given, or in --autotune_output_dir (created).
std::pair<std::string, std::string> StateFiles(const AutotuneOptions& a) {
  std::string state_path = a.state_file;
  std::string pattern_path = a.pattern_cache_file;
  if (!a.output_dir.empty()) {
    std::error_code ec;
    fs::create_directories(a.output_dir, ec);
    if (ec) {
      throw Error(fmt::format("--autotune_output_dir '{}' cannot be created: {}", a.output_dir, ec.message()),
                  Error::Kind::kIo);
    }
    if (state_path.empty()) state_path = (fs::path(a.output_dir) / "autotune_state.json").string();
    if (pattern_path.empty()) pattern_path = (fs::path(a.output_dir) / "autotune_patterns.json").string();
  }
  if (state_path.empty()) {
    log::Info("autotune: no state file (give --autotune_state_file or --autotune_output_dir to resume an interrupted "
              "search and make repeated runs fast)");
  }
  return {state_path, pattern_path};
}

// Per-region timing where the backend allows it: ONNX Runtime's profile of the FP32 model on the
// CPU gives each region's share of the time (kept in the state file, so a resumed search visits
// the groups in the same order); otherwise, or if it fails, the estimate stays. Returns the source.
std::string MeasureRegionCosts(const AutotuneInputs& in, const autotune::Settings& settings, int threads,
                               autotune::SearchState* state, std::vector<autotune::Region>* regions) {
  if (settings.backend != "ort_cpu" || regions->empty()) return "estimated";
  try {
    if (state->node_ms().empty()) {
      TemporaryFolder profile_dir("ptqkit-profile-");
      state->PutNodeMs(
          autotune::ProfileNodeTimes(*in.fp32, in.feeds, settings.timing_runs, threads, profile_dir.path()));
    }
    if (autotune::UseMeasuredCosts(state->node_ms(), regions)) return "measured";
  } catch (const Error& e) {
    log::Warn("autotune: ONNX Runtime's profile of the FP32 model failed ({}); groups are ordered by estimated cost",
              e.what());
  }
  return "estimated";
}

autotune::SearchSettings SearchSettingsFor(const autotune::Settings& settings, const QuantizeOptions& o,
                                           const std::string& pattern_path) {
  autotune::SearchSettings ss;
  ss.schemes_per_region = settings.schemes_per_region;
  ss.max_groups = settings.max_groups;
  ss.passes = settings.passes;
  ss.budget = o.accuracy_budget;
  ss.verbose = o.autotune.verbose;
  for (const auto& [sig, scheme] : autotune::LoadPatternCache(pattern_path)) {
    ss.warm_start[sig] = autotune::ParseScheme(scheme);
  }
  return ss;
}

// The search's figures in the report.
void ReportSearch(const autotune::SearchResult& r, const AutotuneInputs& in, const autotune::Settings& settings,
                  const std::string& backend, const autotune::SearchState& state, AutotuneReport* rep) {
  rep->used = true;
  rep->mode = settings.mode;
  rep->backend = backend;
  rep->warmup_runs = settings.warmup_runs;
  rep->timing_runs = settings.timing_runs;
  rep->fp32 = r.fp32;
  rep->default_placement = r.default_placement;
  rep->autotuned = r.best;
  rep->divergence_default = r.divergence_default;
  rep->divergence_autotuned = r.divergence_best;
  rep->divergence_metric = in.divergence_metric;
  rep->budget = in.options->accuracy_budget;
  rep->candidates_timed = r.timed;
  rep->candidates_from_state = r.from_state;
  rep->candidates_pruned = r.pruned;
  rep->nodes_in_float = r.in_float;
  rep->state_file = state.path();
}

// Each group's decision in the report, and the searched ones in the pattern cache.
void ReportGroups(const std::vector<autotune::RegionGroup>& groups, const autotune::SearchResult& r,
                  const std::string& pattern_path, AutotuneReport* rep) {
  double total_cost = 0.0;
  for (const auto& g : groups) total_cost += g.cost;
  std::map<std::string, std::string> decisions = autotune::LoadPatternCache(pattern_path);
  for (size_t g = 0; g < groups.size(); ++g) {
    AutotuneGroup out;
    out.signature = groups[g].signature;
    for (const auto& region : groups[g].regions) {
      out.nodes.insert(out.nodes.end(), region.quantized_nodes.begin(), region.quantized_nodes.end());
    }
    out.regions = static_cast<int>(groups[g].regions.size());
    out.cost_share = total_cost > 0 ? groups[g].cost / total_cost : 0.0;
    out.scheme = autotune::SchemeName(r.schemes[g]);
    out.why = r.why[g];
    if (out.why == "searched" || out.why == "from the pattern cache") decisions[out.signature] = out.scheme;
    rep->groups.push_back(std::move(out));
  }
  if (!pattern_path.empty()) autotune::SavePatternCache(pattern_path, decisions);
}

}  // namespace

std::vector<std::string> AutotunePlacement(const AutotuneInputs& in, AutotuneReport* report) {
  const auto start = std::chrono::steady_clock::now();
  const QuantizeOptions& o = *in.options;
  const AutotuneOptions& a = o.autotune;
  const autotune::Settings settings = autotune::ResolveSettings(a);
  std::optional<TemporaryFolder> work;
  std::unique_ptr<autotune::LatencyBackend> backend = MakeBackend(settings, a, in, &work);

  std::vector<std::string> quantized;
  for (const auto& [node, op] : in.quantized_nodes) quantized.push_back(node);
  std::vector<autotune::Region> regions = SearchedRegions(in, a, quantized);
  const auto [state_path, pattern_path] = StateFiles(a);
  autotune::SearchState state(state_path, Fingerprint(*in.fp32, o, settings));
  report->cost_source = MeasureRegionCosts(in, settings, a.threads, &state, &regions);
  const std::vector<autotune::RegionGroup> groups = autotune::GroupRegions(regions);
  const autotune::SearchSettings ss = SearchSettingsFor(settings, o, pattern_path);

  log::Info("autotune ({}): {} region(s) in {} group(s), ordered by {} cost; backend {}, {} warm-up + {} timed run(s) "
            "per candidate",
            settings.mode, regions.size(), groups.size(), report->cost_source, backend->name(), settings.warmup_runs,
            settings.timing_runs);
  autotune::Evaluation ev;
  ev.fp32_latency = [&] { return backend->Measure(*in.fp32); };
  ev.latency = [&](const std::vector<std::string>& in_float) { return backend->Measure(in.build(in_float)); };
  ev.divergence = [&](const std::vector<std::string>& in_float) { return in.divergence(in.build(in_float)); };
  const autotune::SearchResult r = autotune::SearchPlacement(groups, ss, ev, &state);

  AutotuneReport& rep = *report;
  ReportSearch(r, in, settings, backend->name(), state, &rep);
  FinalGate(r.in_float, in, backend.get(), &state, &rep);
  rep.speedup_vs_fp32 = rep.gate_autotuned.median_ms > 0 ? rep.gate_fp32.median_ms / rep.gate_autotuned.median_ms : 0.0;
  rep.gate_passed = rep.speedup_vs_fp32 >= a.min_speedup;
  ReportGroups(groups, r, pattern_path, &rep);
  rep.search_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  log::Info("autotune: FP32 {:.3f} ms, rules' placement {:.3f} ms, autotuned {:.3f} ms; final gate {:.3f} vs {:.3f} ms "
            "({:.3f}x FP32); {} candidate(s) timed, {} from the state file, {} pruned; {:.1f} s",
            r.fp32.median_ms, r.default_placement.median_ms, r.best.median_ms, rep.gate_fp32.median_ms,
            rep.gate_autotuned.median_ms, rep.speedup_vs_fp32, r.timed, r.from_state, r.pruned, rep.search_seconds);
  if (!rep.gate_passed) {
    // ModelOpt's final guard: a quantized model that is not faster than FP32 by the margin is not
    // worth its accuracy loss, so the output carries no Q/DQ.
    log::Warn("autotune: the best placement is {:.3f}x the FP32 model's speed on {}, below --autotune_min_speedup {}: "
              "the output has no Q/DQ (as ModelOpt's autotune)",
              rep.speedup_vs_fp32, rep.backend, a.min_speedup);
    return quantized;
  }
  return r.in_float;
}

std::vector<std::string> AutotuneCalibrationTensors(onnx::ModelProto& model, const PlacementOptions& options,
                                                    const ModelPlacement& plan) {
  std::vector<std::string> tensors = plan.ActivationTensors();
  std::set<std::string> seen(tensors.begin(), tensors.end());
  for (const auto& [node, op] : plan.QuantizedNodes()) {
    PlacementOptions po = options;
    po.kept_in_float[node] = "autotune candidate";  // by exact name, as the candidates keep it
    std::set<std::string> matched;  // silent: the run's own plan warned about the user's selectors
    po.matched_selectors = &matched;
    const ModelPlacement variant(&model, po);  // planning only reads the model
    for (const auto& t : variant.ActivationTensors()) {
      if (seen.insert(t).second) tensors.push_back(t);
    }
  }
  return tensors;
}

}  // namespace ptqkit
