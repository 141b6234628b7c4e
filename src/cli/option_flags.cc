#include "cli/option_flags.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace ptqkit::cli {
namespace {

std::string HelpText(const options::OptionSpec& spec) {
  if (!spec.refusal.empty()) return fmt::format("Not taken (ModelOpt flag): {}", spec.refusal);
  std::string shown = spec.show ? spec.show(options::QuantizeSettings{}) : "";
  if (!spec.default_doc.empty()) shown = spec.default_doc;
  shown.erase(std::remove(shown.begin(), shown.end(), '`'), shown.end());
  if (spec.kind == options::Kind::kFlag || shown.empty() || shown == "false") return spec.help;
  return fmt::format("{} [default: {}]", spec.help, shown);
}

}  // namespace

void AddOptionFlags(CLI::App* cmd, unsigned command, std::shared_ptr<options::QuantizeSettings> settings,
                    const FlagSpelling& spelling) {
  std::vector<std::pair<const options::OptionSpec*, CLI::Option*>> flags;
  for (const options::OptionSpec& spec : options::QuantizeOptionTable()) {
    if (!spec.cli || !(spec.commands & command)) continue;
    const std::string name = spelling ? spelling(spec) : fmt::format("--{}", spec.name);
    if (name.empty()) continue;
    CLI::Option* flag = nullptr;
    switch (spec.kind) {
      case options::Kind::kFlag:
        flag = cmd->add_flag(name);
        break;
      case options::Kind::kList:
        flag = cmd->add_option(name)->expected(1, -1)->allow_extra_args()->multi_option_policy(
            CLI::MultiOptionPolicy::TakeAll);
        break;
      default:
        flag = cmd->add_option(name)->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
        if (spec.implicit_value) flag->expected(0, 1);
        break;
    }
    flag->description(HelpText(spec));
    if (!spec.metavar.empty()) flag->type_name(spec.metavar);
    if (spec.required & command) flag->required();
    flags.emplace_back(&spec, flag);
  }
  // Runs inside app.parse(), so a CLI::ValidationError is reported like any other usage error.
  cmd->parse_complete_callback([flags, settings]() {
    for (const auto& [spec, flag] : flags) {
      if (flag->count() == 0) continue;
      std::vector<std::string> values = flag->results();
      if (spec->kind == options::Kind::kFlag) values = {"true"};
      if (spec->implicit_value && (values.empty() || values.back().empty())) values = {*spec->implicit_value};
      if (spec->kind != options::Kind::kList && values.size() > 1) values = {values.back()};
      try {
        options::ApplyOption(*spec, values, *settings);
      } catch (const options::UsageError& e) {
        throw CLI::ValidationError(e.what());
      }
    }
  });
}

}  // namespace ptqkit::cli
