// `ptqkit quantize`: its flags are the option table's (options/quantize_option_table.cc).
#include <fmt/format.h>

#include <memory>

#include "base/io_guard.h"
#include "base/log.h"
#include "runtime/prepared_model.h"
#include "cli/commands.h"
#include "cli/option_flags.h"
#include "runtime/prepared_model.h"
#include "report/quantize_summary.h"
#include "ptqkit/quantize.h"

namespace ptqkit::cli {

int RunQuantizeCommand(options::QuantizeSettings& settings) {
  QuantizeOptions& o = settings.options;
  log::SetLevel(log::ParseLevel(settings.log_level));
  if (!settings.log_file.empty()) {
    // The log is opened before the run: keep it off every file the run reads or writes.
    IoGuard files = QuantizeFiles(o, QuantizeOutputPath(o));
    files.Output(settings.log_file, "--log_file");
    files.Check();
    log::SetFile(settings.log_file);
  }
  const QuantizeReport report = Quantize(o);
  fmt::print("{}", FormatQuantizeSummary(report, o));
  return 0;
}

Command RegisterQuantize(CLI::App& app) {
  auto* cmd = app.add_subcommand("quantize", "Quantize an FP32 ONNX model (writes a new model with Q/DQ nodes)");
  auto settings = std::make_shared<options::QuantizeSettings>();
  AddOptionFlags(cmd, options::kQuantize, settings);
  return [settings]() { return RunQuantizeCommand(*settings); };
}

}  // namespace ptqkit::cli
