// ptqkit command line: `ptqkit <quantize|calibrate|sensitivity|exclude|inspect> [options]`. Options are spelled as in
// ModelOpt's `python -m modelopt.onnx.quantization`. Unknown options are refused (ModelOpt
// silently ignores some); errors print one line "ptqkit: error: ..." and exit non-zero.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>

#include "cli/commands.h"
#include "ptqkit/error.h"

int main(int argc, char** argv) {
  CLI::App app{"ptqkit: post-training quantization of ONNX models (INT8 Q/DQ for TensorRT and ONNX Runtime)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "ptqkit " PTQKIT_VERSION);
  const ptqkit::cli::Command quantize = ptqkit::cli::RegisterQuantize(app);
  const ptqkit::cli::Command inspect = ptqkit::cli::RegisterInspect(app);
  const ptqkit::cli::Command exclude = ptqkit::cli::RegisterExclude(app);
  const ptqkit::cli::Command sensitivity = ptqkit::cli::RegisterSensitivity(app);
  const ptqkit::cli::Command calibrate = ptqkit::cli::RegisterCalibrate(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "ptqkit: error: %s\n", e.what());
    return 2;
  }
  try {
    if (app.got_subcommand("quantize")) return quantize();
    if (app.got_subcommand("inspect")) return inspect();
    if (app.got_subcommand("exclude")) return exclude();
    if (app.got_subcommand("sensitivity")) return sensitivity();
    if (app.got_subcommand("calibrate")) return calibrate();
  } catch (const ptqkit::Error& e) {
    std::fprintf(stderr, "ptqkit: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ptqkit: error: internal error: %s\n", e.what());
    return 3;
  }
  return 2;
}
