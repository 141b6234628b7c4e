#include "options/option_docs.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <iterator>
#include <string>
#include <vector>

namespace ptqkit::options {
namespace {

std::string Flag(const OptionSpec& spec) {
  std::string flag = fmt::format("`--{}", spec.name);
  if (!spec.metavar.empty()) flag += " " + spec.metavar + (spec.kind == Kind::kList ? " ...`" : "`");
  else flag += "`";
  return flag;
}

std::string DefaultCell(const OptionSpec& spec) {
  if (!spec.default_doc.empty()) return spec.default_doc;
  const std::string shown = spec.show ? spec.show(QuantizeSettings{}) : "";
  if (spec.kind == Kind::kFlag || spec.implicit_value == std::optional<std::string>("true")) {
    return shown == "true" ? "on" : "off";
  }
  return shown.empty() ? "" : fmt::format("`{}`", shown);
}

const char* KindName(Kind kind) {
  switch (kind) {
    case Kind::kFlag: return "flag";
    case Kind::kInt: return "int";
    case Kind::kReal: return "real";
    case Kind::kText: return "text";
    case Kind::kList: return "list";
  }
  return "text";
}

}  // namespace

std::string QuantizeOptionsMarkdown() {
  std::string out = "| option | default | meaning |\n|---|---|---|\n";
  auto it = std::back_inserter(out);
  for (const OptionSpec& spec : QuantizeOptionTable()) {
    if (!spec.cli || !spec.refusal.empty() || !(spec.commands & kQuantize)) continue;
    fmt::format_to(it, "| {} | {} | {} |\n", Flag(spec), DefaultCell(spec), spec.details.empty() ? spec.help : spec.details);
  }
  // The sensitivity scan: the options above it shares (by name), then its own.
  std::vector<std::string> shared;
  for (const OptionSpec& spec : QuantizeOptionTable()) {
    if (spec.cli && (spec.commands & kSensitivity) && (spec.commands & kQuantize)) shared.push_back(Flag(spec));
  }
  fmt::format_to(it,
                 "\n`ptqkit sensitivity` (and `ptqkit.sensitivity.score()`, `ptqkit.distributed.score()`) takes "
                 "these options of quantize, with the same meaning: {}; and its own:\n\n"
                 "| option | default | meaning |\n|---|---|---|\n",
                 fmt::join(shared, ", "));
  for (const OptionSpec& spec : QuantizeOptionTable()) {
    if (!spec.cli || !(spec.commands & kSensitivity) || (spec.commands & kQuantize)) continue;
    fmt::format_to(it, "| {} | {} | {} |\n", Flag(spec), DefaultCell(spec), spec.details.empty() ? spec.help : spec.details);
  }
  out += "\nModelOpt 0.47 flags that ptqkit refuses (with this reason) or reads differently:\n\n"
         "| ModelOpt flag | ptqkit |\n|---|---|\n";
  for (const OptionSpec& spec : QuantizeOptionTable()) {
    if (!spec.refusal.empty()) fmt::format_to(it, "| `--{}` | refused: {} |\n", spec.name, spec.refusal);
    else if (!spec.modelopt_difference.empty()) fmt::format_to(it, "| `--{}` | {} |\n", spec.name, spec.modelopt_difference);
  }
  return out;
}

std::string QuantizeOptionsJson() {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  const QuantizeSettings defaults;
  for (const OptionSpec& spec : QuantizeOptionTable()) {
    nlohmann::ordered_json j;
    j["name"] = spec.name;
    j["kind"] = KindName(spec.kind);
    j["metavar"] = spec.metavar;
    j["default"] = spec.show ? spec.show(defaults) : "";
    j["default_doc"] = spec.default_doc;
    j["is_path"] = spec.is_path;
    j["python_none_default"] = spec.python_none_default;
    j["choices"] = spec.choices;
    j["implicit_value"] = spec.implicit_value ? nlohmann::ordered_json(*spec.implicit_value) : nullptr;
    j["quantize"] = (spec.commands & kQuantize) != 0;
    j["calibrate"] = (spec.commands & kCalibrate) != 0;
    j["sensitivity"] = (spec.commands & kSensitivity) != 0;
    j["cli"] = spec.cli;
    j["python"] = spec.python;
    j["aliases"] = spec.aliases;
    j["modelopt_difference"] = spec.modelopt_difference;
    j["refusal"] = spec.refusal;
    j["help"] = spec.help;
    j["details"] = spec.details;
    list.push_back(j);
  }
  return list.dump(1) + "\n";
}

std::string SettingsJson(const QuantizeSettings& settings) {
  nlohmann::ordered_json j;
  for (const OptionSpec& spec : QuantizeOptionTable()) j[spec.name] = spec.show ? spec.show(settings) : "";
  return j.dump(1) + "\n";
}

}  // namespace ptqkit::options
