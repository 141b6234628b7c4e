// RunCommandLine: the whole `ptqkit` command line, shared by the binary (main.cc) and the Python
// extension (`python -m ptqkit`), so both parse, report and exit alike.
//
// Exit codes (README "Exit codes"):
//   0  success
//   1  the run was refused or failed: bad input file, option value, model or data, a file that
//      cannot be read or written, ONNX Runtime failing on the model, not enough memory. One line
//      "ptqkit: error: ..." names the culprit; nothing is written.
//   2  the command line itself is wrong (unknown option, missing value, no subcommand).
//   3  internal error: a defect in ptqkit (please report it with the command line).
#pragma once

namespace ptqkit::cli {

// argv[0] is the program name. "@file" arguments are expanded (options/response_files.h).
int RunCommandLine(int argc, const char* const* argv);

}  // namespace ptqkit::cli
