// The autotune options on the command line, registered in one place for `ptqkit quantize`
// (ModelOpt's `--autotune [quick|default|extensive]` and `--autotune_*` flags) and for the
// standalone `ptqkit autotune` (the same flags without the prefix, as ModelOpt's
// `python -m modelopt.onnx.quantization.autotune`), and the summary lines of an autotune report.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>

#include "ptqkit/autotune.h"

namespace ptqkit::cli {

// Adds `--<prefix>schemes_per_region`, ... to `cmd`, writing into `options` (which must outlive
// the parse). With prefix "autotune_" also adds `--autotune [mode]`. Returns the step to run after
// parsing (reads the node filter file, applies `--autotune` without a value = "default").
std::function<void()> RegisterAutotuneFlags(CLI::App* cmd, AutotuneOptions& options, const std::string& prefix);

void PrintAutotuneReport(const AutotuneReport& report);

}  // namespace ptqkit::cli
