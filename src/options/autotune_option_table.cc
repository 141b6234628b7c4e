#include "options/autotune_option_table.h"

#include <fmt/format.h>

#include "options/option_builders.h"
#include "options/response_files.h"
#include "ptqkit/autotune.h"

namespace ptqkit::options {
namespace {

Spec AutoText(const char* name, std::string AutotuneOptions::*field, const char* help) {
  return Text(name, nullptr, help)
      .Apply([field](QuantizeSettings& s, const std::string& v) { s.options.autotune.*field = v; })
      .Show([field](const QuantizeSettings& s) { return s.options.autotune.*field; });
}

// A count; "-1" where the option gives it a meaning (`all`, `preset`), else at least `min`.
Spec AutoInt(const char* name, int AutotuneOptions::*field, int64_t min, bool minus_one, const char* help) {
  const std::string flag = fmt::format("--{}", name);
  return Spec(name, Kind::kInt, help)
      .Apply([=](QuantizeSettings& s, const std::string& v) {
        s.options.autotune.*field = minus_one && v == "-1" ? -1 : static_cast<int>(ParseCount(flag, v, min, 6));
      })
      .Show([field](const QuantizeSettings& s) { return fmt::format("{}", s.options.autotune.*field); });
}

Spec AutoFlag(const char* name, bool AutotuneOptions::*field, const char* help) {
  const std::string flag = fmt::format("--{}", name);
  Spec b = Flag(name, nullptr, help);
  b.spec().apply = [=](QuantizeSettings& s, const std::vector<std::string>& v) {
    s.options.autotune.*field = v.empty() || ParseBoolWord(flag, v[0]);
  };
  b.spec().show = [field](const QuantizeSettings& s) {
    return std::string(s.options.autotune.*field ? "true" : "false");
  };
  return b;
}

}  // namespace

void AddAutotuneOptions(std::vector<OptionSpec>& t) {
  // --autotune [quick|default|extensive]; Python autotune=True / "quick" / ... (True = default).
  Spec mode = Text("autotune", nullptr,
                   "Search the Q/DQ placement for speed under the accuracy budget: quick | default | extensive")
                  .Metavar("MODE")
                  .PythonNone()
                  .Apply([](QuantizeSettings& s, const std::string& v) {
                    const std::string m = v == "true" || v == "True" ? "default" : v == "false" || v == "False" ? "" : v;
                    if (!m.empty() && m != "quick" && m != "default" && m != "extensive") {
                      throw Error(fmt::format("--autotune: unknown mode '{}' (expected quick, default or extensive)", v));
                    }
                    s.options.autotune.mode = m;
                  })
                  .Show([](const QuantizeSettings& s) { return s.options.autotune.mode; })
                  .Details(R"(Regions (a Conv/Gemm/MatMul with its elementwise tail) grouped by structure; schemes quantize / float / core_only per group; coordinate descent from the rules' placement, most costly group first (ONNX Runtime's per-node profile on the CPU backend), each candidate timed with the run's calibrated scales and kept only when faster by the timings' spread and within the accuracy budget (or the rules' divergence + 10%); a final gate against FP32 (`--autotune_min_speedup`). Presets: quick 2 schemes, 2+10 runs, 6 groups; default 3, 5+20, 16; extensive 3, 10+50, all, 2 sweeps. See the README's "Autotune".)")
                  .ModelOptDifference("ModelOpt times random schemes as TensorRT engines with dummy scales and checks no accuracy; ptqkit searches from the rules with calibrated scales under the accuracy budget, on ONNX Runtime CPU by default (--autotune_backend)");
  mode.spec().implicit_value = "default";
  t.push_back(std::move(mode));
  t.push_back(AutoText("autotune_output_dir", &AutotuneOptions::output_dir,
                       "Folder for the autotune state file and pattern cache").Metavar("D").Path().PythonNone());
  t.push_back(AutoInt("autotune_schemes_per_region", &AutotuneOptions::schemes_per_region, 0, false,
                      "Most schemes tried per region group, the rules' own included (0: the preset's)")
                  .Aliases({"autotune_num_schemes_per_region"})
                  .ModelOptDifference("ModelOpt: random schemes per region (30/50/200); ptqkit has at most 3 per group"));
  t.push_back(AutoText("autotune_pattern_cache", &AutotuneOptions::pattern_cache_file,
                       "Pattern cache (ptqkit JSON): decisions per region signature, a warm start, updated")
                  .Metavar("F").Path().PythonNone().Aliases({"autotune_pattern_cache_file"})
                  .ModelOptDifference("ptqkit's own JSON format; ModelOpt's YAML cache is refused"));
  t.push_back(AutoText("autotune_qdq_baseline", &AutotuneOptions::qdq_baseline,
                       "ModelOpt's Q/DQ warm-start model (refused: ptqkit starts from its rules with this run's scales)")
                  .Metavar("M").Path().PythonNone());
  t.push_back(AutoText("autotune_state_file", &AutotuneOptions::state_file,
                       "State file to resume an interrupted search (default: <autotune_output_dir>/autotune_state.json)")
                  .Metavar("F").Path().PythonNone());
  Spec filter = Text("autotune_node_filter_list", nullptr,
                     "File of wildcard patterns (one a line): only regions with a matching node are tuned")
                    .Metavar("F")
                    .Path()
                    .PythonNone()
                    .Apply([](QuantizeSettings& s, const std::string& path) {
                      s.options.autotune.node_filter_list.clear();
                      for (auto& line : ReadListFile(path, "--autotune_node_filter_list")) {
                        if (!line.empty() && line[0] != '#') s.options.autotune.node_filter_list.push_back(std::move(line));
                      }
                    })
                    .Show([](const QuantizeSettings&) { return std::string(); });
  t.push_back(std::move(filter));
  t.push_back(AutoFlag("autotune_verbose", &AutotuneOptions::verbose, "Log each candidate with its full region signature"));
  t.push_back(AutoFlag("autotune_use_trtexec", &AutotuneOptions::use_trtexec,
                       "Time candidates with TensorRT's trtexec (the tensorrt backend)"));
  t.push_back(AutoText("autotune_timing_cache", &AutotuneOptions::timing_cache,
                       "TensorRT timing cache file (TensorRT backends only)").Metavar("F").Path().PythonNone());
  t.push_back(AutoInt("autotune_warmup_runs", &AutotuneOptions::warmup_runs, 0, true,
                      "Untimed runs before timing a candidate (-1: the preset's)").DefaultDoc("preset: 2 / 5 / 10")
                  .ModelOptDifference("the default follows the --autotune preset (2 / 5 / 10 warm-up runs, sized for "
                                      "ONNX Runtime CPU timings); ModelOpt's is 50 for TensorRT engines"));
  t.push_back(AutoInt("autotune_timing_runs", &AutotuneOptions::timing_runs, 0, false,
                      "Timed runs per candidate, medians compared (0: the preset's)").DefaultDoc("preset: 10 / 20 / 50")
                  .ModelOptDifference("the default follows the --autotune preset (10 / 20 / 50 timed runs); "
                                      "ModelOpt's is 100"));
  t.push_back(AutoText("autotune_trtexec_args", &AutotuneOptions::trtexec_args,
                       "Extra trtexec arguments (with --autotune_use_trtexec)").Metavar("ARGS").PythonNone());
  t.push_back(AutoText("autotune_backend", &AutotuneOptions::backend,
                       "Latency backend: ort_cpu | ort_cuda | ort_trt | tensorrt").Choices({"ort_cpu", "ort_cuda", "ort_trt", "tensorrt"}));
  t.push_back(AutoInt("autotune_threads", &AutotuneOptions::threads, 0, false,
                      "ort_cpu: ONNX Runtime threads while timing (0: its default)"));
  t.push_back(Spec("autotune_min_speedup", Kind::kReal,
                   "Keep Q/DQ only when the result is this many times faster than FP32 (else no Q/DQ, as ModelOpt)")
                  .Apply([](QuantizeSettings& s, const std::string& v) {
                    s.options.autotune.min_speedup = ParseReal("--autotune_min_speedup", v);
                  })
                  .Show([](const QuantizeSettings& s) { return fmt::format("{}", s.options.autotune.min_speedup); }));
  t.push_back(AutoInt("autotune_max_groups", &AutotuneOptions::max_groups, 0, true,
                      "Region groups searched, most costly first (0: the preset's, -1: all)"));
}

}  // namespace ptqkit::options
