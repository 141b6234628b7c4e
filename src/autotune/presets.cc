#include "autotune/presets.h"

#include <fmt/format.h>

#include "ptqkit/error.h"

namespace ptqkit::autotune {
namespace {

Settings Preset(const std::string& mode) {
  Settings s;
  s.mode = mode;
  if (mode == "quick") {
    s.schemes_per_region = 2;  // the rules' placement and one alternative (all in float)
    s.warmup_runs = 2;
    s.timing_runs = 10;
    s.max_groups = 6;
  } else if (mode == "extensive") {
    s.schemes_per_region = 3;
    s.warmup_runs = 10;
    s.timing_runs = 50;
    s.max_groups = -1;
    s.passes = 2;
  }  // "default": the struct's values
  return s;
}

bool IsBackend(const std::string& b) { return b == "ort_cpu" || b == "ort_cuda" || b == "ort_trt" || b == "tensorrt"; }

}  // namespace

void CheckAutotuneOptions(const AutotuneOptions& o, const std::string& quantize_mode) {
  if (o.mode.empty()) return;
  if (o.mode != "quick" && o.mode != "default" && o.mode != "extensive") {
    throw Error(fmt::format("unknown --autotune mode '{}' (expected quick, default or extensive)", o.mode));
  }
  if (quantize_mode == "int4") {
    throw Error("--autotune applies to --quantize_mode int8 and fp8: int4 is weight-only, with no Q/DQ placement to "
                "search");
  }
  if (!IsBackend(o.backend)) {
    throw Error(fmt::format("unknown --autotune_backend '{}' (expected ort_cpu, ort_cuda, ort_trt or tensorrt)",
                            o.backend));
  }
  const std::string backend = o.use_trtexec ? "tensorrt" : o.backend;
  if (o.use_trtexec && o.backend != "ort_cpu" && o.backend != "tensorrt") {
    throw Error(fmt::format("--autotune_use_trtexec selects the tensorrt backend; it contradicts --autotune_backend {}",
                            o.backend));
  }
  if (quantize_mode == "fp8" && backend == "ort_cpu") {
    throw Error("--autotune with --quantize_mode fp8 needs a GPU backend (--autotune_backend ort_cuda, ort_trt or "
                "tensorrt): ONNX Runtime's CPU provider has no FP8 kernels, so CPU timings would measure only the "
                "cost of emulating FP8");
  }
  if (!o.trtexec_args.empty() && backend != "tensorrt") {
    throw Error("--autotune_trtexec_args applies only with --autotune_use_trtexec (the tensorrt backend)");
  }
  if (!o.timing_cache.empty() && backend != "tensorrt" && backend != "ort_trt") {
    throw Error(fmt::format("--autotune_timing_cache is a TensorRT timing cache; it has no meaning for the {} backend",
                            backend));
  }
  if (!o.qdq_baseline.empty()) {
    throw Error("--autotune_qdq_baseline is not supported: ptqkit's search starts from its own placement rules with "
                "this run's calibrated scales, and a Q/DQ model's scales cannot be reused for another calibration");
  }
  if (o.schemes_per_region < 0) {
    throw Error(fmt::format("--autotune_schemes_per_region must be >= 1 (0: the preset's), got {}", o.schemes_per_region));
  }
  if (o.warmup_runs < -1) throw Error(fmt::format("--autotune_warmup_runs must be >= 0, got {}", o.warmup_runs));
  if (o.timing_runs < 0) {
    throw Error(fmt::format("--autotune_timing_runs must be >= 1 (0: the preset's), got {}", o.timing_runs));
  }
  if (o.max_groups < -1) throw Error(fmt::format("--autotune_max_groups must be -1 (all), 0 (preset) or more, got {}", o.max_groups));
  if (o.threads < 0) throw Error(fmt::format("--autotune_threads must be >= 0 (0: ONNX Runtime's default), got {}", o.threads));
  if (!(o.min_speedup > 0.0)) throw Error(fmt::format("--autotune_min_speedup must be > 0, got {}", o.min_speedup));
}

Settings ResolveSettings(const AutotuneOptions& o) {
  Settings s = Preset(o.mode.empty() ? "default" : o.mode);
  s.backend = o.use_trtexec ? "tensorrt" : o.backend;
  if (o.schemes_per_region > 0) s.schemes_per_region = o.schemes_per_region;
  if (o.warmup_runs >= 0) s.warmup_runs = o.warmup_runs;
  if (o.timing_runs > 0) s.timing_runs = o.timing_runs;
  if (o.max_groups != 0) s.max_groups = o.max_groups;
  return s;
}

}  // namespace ptqkit::autotune
