#include "options/option_spec.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "base/input_file.h"
#include "options/option_builders.h"
#include "options/response_files.h"
#include "ptqkit/error.h"

namespace ptqkit::options {

std::string CountProblem(const std::string& text, int64_t min_value, int max_digits) {
  // Digits only, checked before converting: std::stoll would read "12abc" as 12 and saturating
  // parsers read 99999999999999999999 as INT64_MAX.
  const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
  if (!digits || text.size() > static_cast<size_t>(max_digits) || std::stoll(text) < min_value) {
    return fmt::format("expected a whole number from {} with at most {} digits, got '{}'", min_value, max_digits, text);
  }
  return "";
}

int64_t ParseCount(const std::string& option, const std::string& text, int64_t min_value, int max_digits) {
  const std::string problem = CountProblem(text, min_value, max_digits);
  if (!problem.empty()) throw UsageError(fmt::format("{}: {}", option, problem));
  return std::stoll(text);
}

double ParseReal(const std::string& option, const std::string& text) {
  char* end = nullptr;
  const double value = text.empty() ? 0.0 : std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value) || std::isspace(text[0])) {
    throw Error(fmt::format("{}: expected a finite number, got '{}'", option, text));
  }
  return value;
}

bool ParseBoolWord(const std::string& option, const std::string& text) {
  std::string word = text;
  std::transform(word.begin(), word.end(), word.begin(), [](unsigned char c) { return std::tolower(c); });
  if (word == "true" || word == "1" || word == "yes" || word == "on") return true;
  if (word == "false" || word == "0" || word == "no" || word == "off") return false;
  throw Error(fmt::format("{}: expected true or false, got '{}'", option, text));
}

Spec ListFile(const std::string& list_name, std::vector<std::string> QuantizeOptions::*field) {
  const std::string flag = fmt::format("--{}_file", list_name);
  Spec b = Text(fmt::format("{}_file", list_name), nullptr,
                fmt::format("File with more --{} entries, one a line, taken literally", list_name))
               .Metavar(std::string(1, 'F'))
               .Path()
               .CliOnly()  // Python passes the list itself
               .Commands(kQuantize | kCalibrate)
               .Details(fmt::format("more --{} entries, one a line, taken literally (any character but a line "
                                    "break; empty lines skipped)",
                                    list_name));
  // The table lists it after the list option itself, so the file's entries add to the flag's.
  b.spec().apply = [=](QuantizeSettings& s, const std::vector<std::string>& v) {
    for (auto& entry : ReadListFile(v.at(0), flag)) (s.options.*field).push_back(std::move(entry));
  };
  b.spec().show = [](const QuantizeSettings&) { return std::string(); };
  return b;
}

Spec Refused(std::string name, Kind kind, std::string reason) {
  Spec b(std::move(name), kind, "ModelOpt flag, not taken by ptqkit (see the README)");
  b.spec().refusal = std::move(reason);
  b.spec().show = [](const QuantizeSettings&) { return std::string(); };
  return b;
}

std::vector<std::map<std::string, std::string>> ParseShapesProfile(const std::string& text) {
  // ModelOpt's rule: a path that exists is read as a JSON file (at most 1 MiB), else the text is JSON.
  std::error_code ec;
  const bool is_file = !text.empty() && text.front() != '[' && std::filesystem::is_regular_file(text, ec);
  const std::string json = is_file ? ReadWholeInputFile(text, "--input_shapes_profile", int64_t{1} << 20) : text;
  const nlohmann::json profile = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  std::vector<std::map<std::string, std::string>> result;
  const auto bad = [&](const std::string& why) {
    return Error(fmt::format("--input_shapes_profile: {} (expected a JSON list with one object of string values per "
                             "--calibration_eps entry, inline or in a file)",
                             why));
  };
  if (profile.is_discarded()) throw bad(is_file ? "'" + text + "' is not valid JSON" : "not valid JSON nor a file");
  if (!profile.is_array()) throw bad("not a list");
  for (const auto& item : profile) {
    if (!item.is_object()) throw bad("an entry is not an object");
    std::map<std::string, std::string> options;
    for (const auto& [key, value] : item.items()) {
      if (!value.is_string()) throw bad(fmt::format("'{}' is not a string", key));
      options[key] = value.get<std::string>();
    }
    result.push_back(std::move(options));
  }
  return result;
}

const OptionSpec* FindQuantizeOption(const std::string& name) {
  for (const OptionSpec& spec : QuantizeOptionTable()) {
    if (spec.name == name) return &spec;
    if (std::find(spec.aliases.begin(), spec.aliases.end(), name) != spec.aliases.end()) return &spec;
  }
  return nullptr;
}

void ApplyOption(const OptionSpec& spec, const std::vector<std::string>& values, QuantizeSettings& settings) {
  const std::string flag = fmt::format("--{}", spec.name);
  if (!spec.refusal.empty()) throw Error(fmt::format("{} is not taken by ptqkit: {}", flag, spec.refusal));
  if (spec.kind != Kind::kFlag && spec.kind != Kind::kList && values.size() != 1) {
    throw Error(fmt::format("{} takes one value, got {}", flag, values.size()));
  }
  for (const std::string& v : values) {
    if (!spec.choices.empty() && std::find(spec.choices.begin(), spec.choices.end(), v) == spec.choices.end()) {
      throw Error(fmt::format("{}: '{}' is not one of {}", flag, v, fmt::join(spec.choices, ", ")));
    }
  }
  if (spec.apply) spec.apply(settings, values);
}

void ApplyGivenOptions(const std::map<std::string, std::vector<std::string>>& given, unsigned command,
                       QuantizeSettings& settings) {
  for (const OptionSpec& spec : QuantizeOptionTable()) {
    if (!spec.python || !(spec.commands & command)) continue;
    const auto it = given.find(spec.name);
    if (it != given.end()) ApplyOption(spec, it->second, settings);
  }
}

}  // namespace ptqkit::options
