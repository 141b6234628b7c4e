// The files a sensitivity scan writes, for `ptqkit sensitivity` and ptqkit.sensitivity.score()
// alike: the scores JSON and the HTML report, both written or neither (each is rendered first and
// renamed into place only when both are ready).
#pragma once

#include <string>

#include "sensitivity/scores_file.h"

namespace ptqkit::sensitivity {

struct ScanOutputs {
  std::string json_path;    // "" = no JSON file
  std::string html_path;    // "" = no HTML report
  std::string data_label;   // the report's calibration data line: a path, "(synthetic)", "(merged parts)"
  std::string method_label; // the report's calibration method line
};

// Returns the scores JSON text (SerializeResult), written or not.
std::string WriteScanOutputs(const SensitivityResult& result, const ScanOutputs& outputs);

}  // namespace ptqkit::sensitivity
