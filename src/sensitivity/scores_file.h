// SensitivityResult: what a sensitivity scan found, and its JSON file (<stem>.sensitivity.json).
// The file is the hand-over between `ptqkit sensitivity` and `ptqkit exclude` (and the Python
// API), so its bytes are stable: keys sorted, floats written by nlohmann-json's shortest
// round-trip formatting, two-space indentation, trailing newline. The same result gives the same
// bytes on every run.
//
// JSON keys: onnx_path, scores {target: score}, failed [{"target", "reason"}], calibration_source
// ("real" | "synthetic"), num_calibration_samples, metric ("kl_div" | "mse" | "cos"), granularity
// ("op_type" | "node"), target_precision, timings {phase: seconds}, ptqkit_version,
// non_finite [{"target", "reason"}] (their score is kNonFiniteScore), num_non_finite.
// Reading accepts files without timings and ptqkit_version, "failed" entries that are plain
// target names, and ignores keys it does not know (files written by ModelOpt's scan read too).
// Value type; functions are thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "ptqkit/sensitivity_result.h"

namespace ptqkit::sensitivity {

using ::ptqkit::SensitivityResult;  // so sensitivity::SensitivityResult names it too

// REQUIRES: every score and timing is finite (a probe without a finite score belongs in failed).
// Throws ptqkit::Error naming the target otherwise.
nlohmann::json ToJson(const SensitivityResult& result);
// Throws ptqkit::Error naming `source` (a file name, for messages) and the missing or bad field.
SensitivityResult FromJson(const nlohmann::json& json, const std::string& source);

// The exact bytes Write() stores.
std::string SerializeResult(const SensitivityResult& result);
// Atomic (temporary file + rename). Throws ptqkit::Error (kIo) naming `path` on failure.
void WriteResult(const SensitivityResult& result, const std::string& path);
// Throws ptqkit::Error naming `path` when it cannot be read, is not JSON or lacks a field.
SensitivityResult ReadResult(const std::string& path);

}  // namespace ptqkit::sensitivity
