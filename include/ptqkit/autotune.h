// Autotune: Q/DQ placement searched for speed under an accuracy budget (ModelOpt's `--autotune`).
//
// The graph's quantized nodes are cut into regions (a Conv/ConvTranspose/Gemm/MatMul with its
// elementwise tail, or a lone quantized node); regions with the same structure (op types,
// attributes, weight and activation shapes) form one group and share one decision. Each group
// has a few schemes — everything the placement rules quantize, the core op only (tail in float),
// all in float — and the search starts from the rules' placement and walks the groups in order of
// estimated cost (multiply-accumulates), timing each candidate with real calibrated scales (one
// calibration serves every candidate). A candidate is kept when it is faster than the incumbent by
// a margin and its output divergence on the held-out samples stays within the accuracy budget
// (QuantizeOptions::accuracy_budget; without one, the rules' placement's divergence + 10%).
// Timings are kept in a state file keyed by the candidate, so an interrupted search resumes and a
// repeated run times nothing; decisions are kept per group signature in a pattern cache.
//
// AutotuneOptions is plain data, a member of QuantizeOptions (QuantizeOptions::autotune); mode ""
// leaves autotune off. The option names are ModelOpt's `--autotune_*` flags without the prefix.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ptqkit {

struct AutotuneOptions {
  // "" = off; quick | default | extensive (presets of schemes_per_region, warmup_runs,
  // timing_runs and max_groups, see autotune/presets.h). An explicit value below overrides it.
  std::string mode;
  int schemes_per_region = 0;  // most schemes tried per region group, the rules' own included (0: preset)
  int warmup_runs = -1;        // untimed runs before timing a candidate (-1: preset)
  int timing_runs = 0;         // timed runs per candidate; the median is compared (0: preset)
  int max_groups = 0;          // region groups searched, most costly first (0: preset, -1: all)

  // Where timings come from: ort_cpu (ONNX Runtime CPU provider) | ort_cuda | ort_trt (ONNX
  // Runtime's CUDA / TensorRT providers) | tensorrt (TensorRT itself, through trtexec). The GPU
  // backends refuse to start, naming what is missing, when no GPU or TensorRT is found.
  std::string backend = "ort_cpu";
  bool use_trtexec = false;       // ModelOpt's flag: same as backend = tensorrt
  std::string trtexec_args;       // extra trtexec arguments (tensorrt backend only)
  std::string timing_cache;       // TensorRT timing cache file (tensorrt backend only)
  int threads = 1;                // ort_cpu: intra-op threads while timing, fixed for stable timings (0: ORT's default)

  // The final gate (ModelOpt's 1.02): the autotuned model is kept only when the FP32 model's
  // median latency is at least min_speedup times its own; otherwise the output has no Q/DQ.
  double min_speedup = 1.02;

  std::string output_dir;          // state file and pattern cache go here when not named
  std::string state_file;          // default <output_dir>/autotune_state.json; "" without output_dir: none
  std::string pattern_cache_file;  // decisions by group signature (JSON), read as a warm start, then updated
  // Wildcard patterns (fnmatch, as ModelOpt): only regions with a node whose name matches one are
  // tuned; the others keep the rules' placement. The CLI reads them from a file, one a line.
  std::vector<std::string> node_filter_list;
  std::string qdq_baseline;        // ModelOpt: a Q/DQ model to warm-start from (refused, see CheckAutotuneOptions)
  bool verbose = false;            // log every candidate
};

// One timed model: median and spread of the timed runs, in milliseconds.
struct LatencySummary {
  double median_ms = 0.0;
  double p10_ms = 0.0;
  double p90_ms = 0.0;
  double mad_ms = 0.0;  // median absolute deviation
  int runs = 0;
};

// One region group and what the search decided for it.
struct AutotuneGroup {
  std::string signature;
  std::vector<std::string> nodes;  // the quantized nodes of every region in the group
  int regions = 0;
  double cost_share = 0.0;  // share of the FP32 model's time (or of its multiply-accumulates, see cost_source)
  std::string scheme;       // the chosen scheme: quantize | core_only | float
  std::string why;          // searched / skipped (below measurable) / filtered / from the pattern cache
};

struct AutotuneReport {
  bool used = false;
  std::string mode;
  std::string backend;
  int warmup_runs = 0;
  int timing_runs = 0;
  LatencySummary fp32;
  LatencySummary default_placement;
  LatencySummary autotuned;
  // The final gate times FP32 and the chosen placement again, alternately (three rounds each,
  // medians of the rounds), so that a change of machine load during the search cannot decide it.
  LatencySummary gate_fp32;
  LatencySummary gate_autotuned;
  double speedup_vs_fp32 = 0.0;  // gate_fp32.median / gate_autotuned.median
  bool gate_passed = false;      // speedup_vs_fp32 >= min_speedup; false: the output has no Q/DQ
  double divergence_default = 0.0;
  double divergence_autotuned = 0.0;
  std::string divergence_metric;
  double budget = -1.0;           // the accuracy budget candidates had to keep
  // What ordered the groups: "measured" (ONNX Runtime's per-node profile of the FP32 model, CPU
  // backend) or "estimated" (multiply-accumulates from the shapes).
  std::string cost_source;
  int candidates_timed = 0;       // candidates measured in this run
  int candidates_from_state = 0;  // candidates whose timing came from the state file
  int candidates_pruned = 0;      // schemes skipped (same placement as another, or dominated)
  double search_seconds = 0.0;
  std::vector<std::string> nodes_in_float;  // quantized by the rules, kept in float by autotune
  std::vector<AutotuneGroup> groups;
  std::string state_file;
};

}  // namespace ptqkit
