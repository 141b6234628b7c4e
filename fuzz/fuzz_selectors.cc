// libFuzzer harness: the text parsers of the command line and the regex matching. The input is
// split at NUL bytes: the first part is a pattern (compiled as a node selector and matched against
// the other parts as names, and used as a --blocks group over them as scored targets), and every
// part also goes through --calibration_shapes / --calibration_batch_axis parsing and the ONNX
// Runtime message cleaner. Rejections must be ptqkit::Error; matching must never recurse deeply or
// take super-linear time (libFuzzer's -timeout catches that).
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/pattern.h"
#include "ptqkit/calibration.h"
#include "ptqkit/error.h"
#include "ptqkit/picker.h"
#include "runtime/ort_message.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> parts(1);
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      parts.emplace_back();
    } else {
      parts.back() += static_cast<char>(data[i]);
    }
  }
  for (const auto& part : parts) {
    try {
      (void)ptqkit::ParseShapeList(part);
    } catch (const ptqkit::Error&) {
    }
    try {
      (void)ptqkit::ParseBatchAxisList(part);
    } catch (const ptqkit::Error&) {
    }
    (void)ptqkit::StripOrtInternals(part);
  }
  try {
    const ptqkit::Pattern pattern(parts[0], "fuzz");
    std::map<std::string, double> scores;
    for (size_t i = 1; i < parts.size(); ++i) {
      (void)pattern.MatchesFromStart(parts[i]);
      (void)pattern.FoundIn(parts[i]);
      scores[parts[i]] = static_cast<double>(i);
    }
    ptqkit::PickerOptions options;
    options.blocks = {{"g", {parts[0]}}};
    (void)ptqkit::SuggestExclusion(scores, options);
  } catch (const ptqkit::Error&) {
  }
  return 0;
}
