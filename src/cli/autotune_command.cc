// `ptqkit autotune`: the standalone entry of the autotune search (ModelOpt's `python -m
// modelopt.onnx.quantization.autotune`): `ptqkit quantize --autotune` under that command's names.
// Its flags are the option table's quantize options, with the autotune ones without their
// `autotune_` prefix (--mode, --schemes_per_region, --state_file, ...) and ModelOpt's --quant_type
// for --quantize_mode; the mode defaults to `default`.
#include <fmt/format.h>

#include <memory>

#include "cli/commands.h"
#include "cli/option_flags.h"

namespace ptqkit::cli {
namespace {

std::string AutotuneSpelling(const options::OptionSpec& spec) {
  const std::string prefix = "autotune_";
  if (spec.name == "autotune") return "--mode";
  if (spec.name.rfind(prefix, 0) == 0) return fmt::format("--{}", spec.name.substr(prefix.size()));
  if (spec.name == "quantize_mode") return "--quantize_mode,--quant_type";
  return fmt::format("--{}", spec.name);
}

}  // namespace

Command RegisterAutotune(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "autotune", "Quantize with the Q/DQ placement searched for speed under an accuracy budget (= quantize --autotune)");
  auto settings = std::make_shared<options::QuantizeSettings>();
  settings->options.autotune.mode = "default";
  AddOptionFlags(cmd, options::kQuantize, settings, AutotuneSpelling);
  return [settings]() { return RunQuantizeCommand(*settings); };
}

}  // namespace ptqkit::cli
