// The --autotune presets (quick | default | extensive) and the checks of the autotune options.
//
// ModelOpt's presets set schemes_per_region / warmup_runs / timing_runs for TensorRT engine
// builds on a GPU (30/10/50, 50/50/100, 200/50/200). ptqkit keeps their meaning — quick tries
// fewer schemes and runs fewer timings, extensive more — with numbers sized for ptqkit's search:
// a region group has at most three schemes (no random mutation to feed), and a CPU forward pass
// of a ResNet-50 takes tens of milliseconds, not a fraction of one, so `quick` must stay within
// about a minute there. Explicit values override the preset, as in ModelOpt.
#pragma once

#include <string>

#include "ptqkit/autotune.h"

namespace ptqkit::autotune {

struct Settings {
  std::string mode;
  std::string backend;        // ort_cpu | ort_cuda | ort_trt | tensorrt
  int schemes_per_region = 3;
  int warmup_runs = 5;
  int timing_runs = 20;
  int max_groups = 16;        // -1: all
  int passes = 1;             // coordinate-descent sweeps over the groups
};

// Throws ptqkit::Error naming the option that is wrong or that has no meaning for ptqkit (and why).
// `quantize_mode` is the run's mode (fp8 cannot be timed on the CPU provider).
void CheckAutotuneOptions(const AutotuneOptions& options, const std::string& quantize_mode);

// The preset of options.mode with the explicit values applied. REQUIRES: CheckAutotuneOptions passed.
Settings ResolveSettings(const AutotuneOptions& options);

}  // namespace ptqkit::autotune
