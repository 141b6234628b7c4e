// `ptqkit options`: the option table itself, for people and for tests.
//   ptqkit options                          the README's markdown tables
//   ptqkit options --format json            every option with kind, default, choices, refusal
//   ptqkit options --parse -- ARGS...       ARGS read as `ptqkit quantize` flags; prints every value
#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "cli/commands.h"
#include "cli/option_flags.h"
#include "options/option_docs.h"
#include "ptqkit/error.h"

namespace ptqkit::cli {

Command RegisterOptions(CLI::App& app) {
  auto* cmd = app.add_subcommand("options", "Print the quantize option table (markdown or JSON), or parse flags");
  auto format = std::make_shared<std::string>("markdown");
  auto parse = std::make_shared<bool>(false);
  auto args = std::make_shared<std::vector<std::string>>();
  cmd->add_option("--format", *format, "markdown | json")->capture_default_str();
  cmd->add_flag("--parse", *parse, "Read the arguments after -- as `ptqkit quantize` flags and print every value");
  cmd->add_option("args", *args, "With --parse: quantize flags (after --)");
  return [=]() {
    if (*parse) {
      CLI::App quantize{"ptqkit quantize (parsed only)"};
      auto settings = std::make_shared<options::QuantizeSettings>();
      AddOptionFlags(&quantize, options::kQuantize, settings);
      std::vector<std::string> reversed(args->rbegin(), args->rend());  // CLI11 takes them last first
      try {
        quantize.parse(reversed);
      } catch (const CLI::ParseError& e) {
        std::fprintf(stderr, "ptqkit: error: %s\n", e.what());
        return 2;
      }
      fmt::print("{}", options::SettingsJson(*settings));
      return 0;
    }
    if (*format == "markdown") fmt::print("{}", options::QuantizeOptionsMarkdown());
    else if (*format == "json") fmt::print("{}", options::QuantizeOptionsJson());
    else throw Error(fmt::format("options --format: '{}' is not one of markdown, json", *format));
    return 0;
  };
}

}  // namespace ptqkit::cli
