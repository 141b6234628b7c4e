// The CLI side of the option table (options/option_spec.h): every spec a subcommand takes becomes
// a flag, and once the command line is parsed the given ones are applied in table order.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <memory>
#include <string>

#include "options/option_spec.h"

namespace ptqkit::cli {

// Adds the flags of every table option that `command` (options::kQuantize / kCalibrate) takes.
// While `cmd` is parsed, the given ones are applied to `*settings`: a value of the wrong type is
// a usage error (exit 2); a refused ModelOpt flag or a bad value is ptqkit::Error (exit 1).
// `spelling` gives a subcommand its own names for some flags (CLI11's "--a,--b" form; "" = the
// option is not offered); by default every option is "--<name>".
using FlagSpelling = std::function<std::string(const options::OptionSpec&)>;
void AddOptionFlags(CLI::App* cmd, unsigned command, std::shared_ptr<options::QuantizeSettings> settings,
                    const FlagSpelling& spelling = nullptr);

}  // namespace ptqkit::cli
