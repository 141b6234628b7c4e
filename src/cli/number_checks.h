// Validators for the CLI's counts. CLI11's own integer conversion saturates: it read
// "--calibration_batch_size 99999999999999999999" as the largest int64 instead of refusing it. These
// run on the text before conversion, so an out-of-range count is a usage error (exit 2) naming the
// option.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "options/option_spec.h"

namespace ptqkit::cli {

// Decimal digits only (no sign), value at least `min`, at most `max_digits` digits.
inline CLI::Validator Count(int64_t min, int max_digits) {
  return CLI::Validator([=](std::string& text) { return options::CountProblem(text, min, max_digits); },
                        "");  // no name: --help keeps showing INT, as scripts parse it
}

}  // namespace ptqkit::cli
