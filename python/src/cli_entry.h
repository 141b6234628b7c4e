// The `ptqkit` command line run in-process, for `python -m ptqkit` and
// `python -m ptqkit.sensitivity`: the same CLI11 subcommands as the binary (src/cli/*.cc are
// compiled into the extension), parsed and dispatched as src/cli/main.cc does, so flags, help,
// messages and exit codes match the binary.
#pragma once

#include <string>
#include <vector>

namespace ptqkit::python {

// args[0] is the program name shown in usage lines, args[1] the subcommand. Returns the exit
// code: 0 ok, 1 ptqkit error, 2 usage error, 3 internal error. Never throws.
int RunCli(const std::vector<std::string>& args);

}  // namespace ptqkit::python
