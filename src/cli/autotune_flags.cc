#include "cli/autotune_flags.h"

#include <fmt/format.h>

#include <memory>

#include "cli/response_files.h"

namespace ptqkit::cli {

std::function<void()> RegisterAutotuneFlags(CLI::App* cmd, AutotuneOptions& o, const std::string& prefix) {
  const auto flag = [&prefix](const char* name) { return fmt::format("--{}{}", prefix, name); };
  CLI::Option* mode = nullptr;
  if (prefix == "autotune_") {
    mode = cmd->add_option("--autotune", o.mode,
                           "Search the Q/DQ placement for speed under the accuracy budget: quick | default | extensive "
                           "(no value: default)")
               ->expected(0, 1)
               ->check(CLI::IsMember({"", "quick", "default", "extensive"}));
  }
  cmd->add_option(flag("output_dir"), o.output_dir, "Folder for the autotune state file and pattern cache");
  cmd->add_option(flag("schemes_per_region"), o.schemes_per_region,
                  "Most schemes tried per region group, the rules' own included (quick 2, default/extensive 3)");
  cmd->add_option(flag("pattern_cache"), o.pattern_cache_file,
                  "Pattern cache (ptqkit JSON): decisions per region signature, read as a warm start and updated");
  cmd->add_option(flag("qdq_baseline"), o.qdq_baseline, "ModelOpt's Q/DQ warm-start model (not supported by ptqkit)");
  cmd->add_option(flag("state_file"), o.state_file,
                  "State file to resume an interrupted search (default: <output_dir>/autotune_state.json)");
  auto filter_file = std::make_shared<std::string>();
  cmd->add_option(flag("node_filter_list"), *filter_file,
                  "File of wildcard patterns (one a line, # comments): only regions with a matching node are tuned");
  cmd->add_flag(flag("verbose"), o.verbose, "Log each candidate with its full region signature");
  cmd->add_flag(flag("use_trtexec"), o.use_trtexec, "Time candidates with TensorRT's trtexec (the tensorrt backend)");
  cmd->add_option(flag("timing_cache"), o.timing_cache, "TensorRT timing cache file (TensorRT backends only)");
  cmd->add_option(flag("warmup_runs"), o.warmup_runs, "Untimed runs before timing a candidate (quick 2, default 5, extensive 10)");
  cmd->add_option(flag("timing_runs"), o.timing_runs,
                  "Timed runs per candidate; medians are compared (quick 10, default 20, extensive 50)");
  cmd->add_option(flag("trtexec_args"), o.trtexec_args, "Extra trtexec arguments (with use_trtexec)");
  // ptqkit's own: backends, thread count, the final gate, how many groups are searched.
  cmd->add_option(flag("backend"), o.backend, "Latency backend: ort_cpu | ort_cuda | ort_trt | tensorrt")
      ->capture_default_str();
  cmd->add_option(flag("threads"), o.threads, "ort_cpu: ONNX Runtime threads while timing (0: its default)")
      ->capture_default_str();
  cmd->add_option(flag("min_speedup"), o.min_speedup,
                  "Keep Q/DQ only when the result is this many times faster than FP32 (else no Q/DQ, as ModelOpt)")
      ->capture_default_str();
  cmd->add_option(flag("max_groups"), o.max_groups,
                  "Region groups searched, most costly first (quick 6, default 16, extensive all; -1: all)");
  return [&o, mode, filter_file]() {
    if (mode != nullptr && mode->count() > 0 && o.mode.empty()) o.mode = "default";
    if (!filter_file->empty()) {
      for (auto& line : ReadListFile(*filter_file, "--autotune_node_filter_list")) {
        if (!line.empty() && line[0] != '#') o.node_filter_list.push_back(std::move(line));
      }
    }
  };
}

void PrintAutotuneReport(const AutotuneReport& r) {
  if (!r.used) return;
  const auto line = [](const char* what, const LatencySummary& s) {
    fmt::print("  {:<18} {:9.3f} ms median (p10 {:.3f}, p90 {:.3f}, MAD {:.3f}; {} runs)\n", what, s.median_ms, s.p10_ms,
               s.p90_ms, s.mad_ms, s.runs);
  };
  fmt::print("autotune ({}, backend {}, {} warm-up + {} timed runs): {} candidate(s) timed, {} from the state file, {} "
             "pruned, {:.1f} s\n",
             r.mode, r.backend, r.warmup_runs, r.timing_runs, r.candidates_timed, r.candidates_from_state,
             r.candidates_pruned, r.search_seconds);
  line("FP32", r.fp32);
  line("rules' placement", r.default_placement);
  line("autotuned", r.autotuned);
  line("gate: FP32", r.gate_fp32);
  line("gate: autotuned", r.gate_autotuned);
  fmt::print("  speedup vs FP32 (gate) {:.3f}x: {}\n", r.speedup_vs_fp32,
             r.gate_passed ? "kept" : "below --autotune_min_speedup, the output has NO Q/DQ");
  fmt::print("  {} divergence: rules' placement {:.6g}, autotuned {:.6g}{}\n", r.divergence_metric,
             r.divergence_default, r.divergence_autotuned, r.budget >= 0 ? fmt::format(" (budget {})", r.budget) : "");
  fmt::print("  groups ordered by {} cost (share of {}):\n", r.cost_source,
             r.cost_source == "measured" ? "the FP32 model's time" : "multiply-accumulates");
  for (const auto& g : r.groups) {
    if (g.scheme == "quantize" && g.why != "searched") continue;
    fmt::print("  {:>5.1f}%  {:<9} x{:<3} {}  [{}]\n", 100 * g.cost_share, g.scheme, g.regions,
               g.signature.size() > 70 ? g.signature.substr(0, 67) + "..." : g.signature, g.why);
  }
  if (!r.state_file.empty()) fmt::print("  state file: {}\n", r.state_file);
}

}  // namespace ptqkit::cli
