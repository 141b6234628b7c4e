#include "cli_entry.h"

#include <cstdio>
#include <iostream>

#include "cli/run.h"

namespace ptqkit::python {

// The binary's own entry (src/cli/run.cc): same parsing, messages and exit codes.
int RunCli(const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  for (const auto& arg : args) argv.push_back(arg.c_str());
  const int code = cli::RunCommandLine(static_cast<int>(argv.size()), argv.data());
  // Python writes to the same descriptors through its own buffers: hand them over flushed.
  std::cout.flush();
  std::cerr.flush();
  std::fflush(stdout);
  std::fflush(stderr);
  return code;
}

}  // namespace ptqkit::python
