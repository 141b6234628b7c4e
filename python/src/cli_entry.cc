#include "cli_entry.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <iostream>

#include "cli/commands.h"
#include "ptqkit/error.h"

namespace ptqkit::python {

// Mirrors src/cli/main.cc (which cannot be linked in: it defines main()); keep the two in step.
int RunCli(const std::vector<std::string>& args) {
  CLI::App app{"ptqkit: post-training quantization of ONNX models (INT8 Q/DQ for TensorRT and ONNX Runtime)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "ptqkit " PTQKIT_VERSION);
  const cli::Command quantize = cli::RegisterQuantize(app);
  const cli::Command inspect = cli::RegisterInspect(app);
  const cli::Command exclude = cli::RegisterExclude(app);
  const cli::Command sensitivity = cli::RegisterSensitivity(app);
  const cli::Command calibrate = cli::RegisterCalibrate(app);

  std::vector<char*> argv;
  for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  int code = 2;
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
    if (app.got_subcommand("quantize")) code = quantize();
    if (app.got_subcommand("inspect")) code = inspect();
    if (app.got_subcommand("exclude")) code = exclude();
    if (app.got_subcommand("sensitivity")) code = sensitivity();
    if (app.got_subcommand("calibrate")) code = calibrate();
  } catch (const CLI::CallForHelp& e) {
    code = app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    code = app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    code = app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "ptqkit: error: %s\n", e.what());
    code = 2;
  } catch (const Error& e) {
    std::fprintf(stderr, "ptqkit: error: %s\n", e.what());
    code = 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ptqkit: error: internal error: %s\n", e.what());
    code = 3;
  }
  // Python writes to the same descriptors through its own buffers: hand them over flushed.
  std::cout.flush();
  std::cerr.flush();
  std::fflush(stdout);
  std::fflush(stderr);
  return code;
}

}  // namespace ptqkit::python
