// SensitivityResult: what a sensitivity scan found — a score per target (op type or node name),
// the targets whose probe failed or turned the outputs non-finite, and how the scan was run.
// Returned by ptqkit::ScoreSensitivity (ptqkit/sensitivity.h) and read back from the scores file
// that `ptqkit sensitivity` writes (its JSON keys are these field names). A plain value type: the
// caller owns it; no synchronisation is needed to read it from several threads.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace ptqkit {

// The score of a probe whose outputs turned NaN or Inf: the largest finite double, so that it ranks
// first and stays a plain JSON number for readers that only know "scores".
inline constexpr double kNonFiniteScore = 1.7976931348623157e+308;

// How many samples a target's probe saw and how sure its score is (scans run with
// --stop_when_settled): the score's interval (mean ± 3 standard errors) and why sampling stopped:
// "separated" (the interval overlaps neither neighbour in the ranking), "precise" (within ±5 % of
// the score), "negligible" (under 0.1 % of the total score mass), "decided" (wholly on one side of
// the default picker's coverage-0.90 cut), "all samples", or "unreached" (0 samples: quantizing it
// changes no graph output, its score is 0).
struct TargetSampling {
  int64_t samples = 0;
  double low = 0.0, high = 0.0;
  std::string settled;
};

struct SensitivityResult {
  std::string onnx_path;
  std::map<std::string, double> scores;  // target -> score; higher = more sensitive
  std::vector<std::pair<std::string, std::string>> failed;  // (target, reason); never in scores
  // (target, reason): probes whose outputs turned NaN/Inf. They are in scores with kNonFiniteScore,
  // so they rank first, and the picker always excludes them.
  std::vector<std::pair<std::string, std::string>> non_finite;
  std::string calibration_source;                           // "real" | "synthetic"
  int64_t num_calibration_samples = 0;
  std::string metric;                     // "kl_div" | "mse" | "cos"
  std::string granularity;                // "op_type" | "node"
  std::string target_precision;           // "int8" | "fp8"
  std::map<std::string, double> timings;  // phase -> seconds
  std::map<std::string, TargetSampling> sampling;  // target -> its sampling; empty unless settling
  std::string ptqkit_version;
};

}  // namespace ptqkit
