// The `ptqkit` subcommands. Each Register* adds a subcommand and its options to the CLI11 app
// and returns the function that runs it after parsing; the function returns the exit code.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

#include "options/option_spec.h"

namespace ptqkit::cli {

using Command = std::function<int()>;

Command RegisterQuantize(CLI::App& app);
Command RegisterInspect(CLI::App& app);
Command RegisterExclude(CLI::App& app);
Command RegisterSensitivity(CLI::App& app);
Command RegisterCalibrate(CLI::App& app);
Command RegisterOptions(CLI::App& app);
Command RegisterAutotune(CLI::App& app);

// Runs a parsed quantize command line (`ptqkit quantize` and `ptqkit autotune`): logging, the
// quantization, the summary on stdout. Returns the exit code.
int RunQuantizeCommand(options::QuantizeSettings& settings);

}  // namespace ptqkit::cli
