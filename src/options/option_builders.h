// Small builders that keep quantize_option_table.cc one readable entry per option: each binds a
// QuantizeOptions field (or a custom apply) and fills the parse / show functions for its kind.
#pragma once

#include <fmt/format.h>

#include <string>
#include <utility>
#include <vector>

#include "options/option_spec.h"

namespace ptqkit::options {

class Spec {
 public:
  Spec(std::string name, Kind kind, std::string help) {
    s_.name = std::move(name);
    s_.kind = kind;
    s_.help = std::move(help);
  }
  operator OptionSpec() && { return std::move(s_); }  // NOLINT: the table takes the built spec

  Spec&& Metavar(std::string m) && { s_.metavar = std::move(m); return std::move(*this); }
  Spec&& Details(std::string d) && { s_.details = std::move(d); return std::move(*this); }
  Spec&& DefaultDoc(std::string d) && { s_.default_doc = std::move(d); return std::move(*this); }
  Spec&& Choices(std::vector<std::string> c) && { s_.choices = std::move(c); return std::move(*this); }
  Spec&& Path() && { s_.is_path = true; return std::move(*this); }
  Spec&& PythonNone() && { s_.python_none_default = true; return std::move(*this); }
  Spec&& Commands(unsigned c) && { s_.commands = c; return std::move(*this); }
  Spec&& KindIs(Kind k) && { s_.kind = k; return std::move(*this); }
  Spec&& Required(unsigned c) && { s_.required = c; return std::move(*this); }
  Spec&& CliOnly() && { s_.python = false; return std::move(*this); }
  Spec&& ModelOptDifference(std::string d) && { s_.modelopt_difference = std::move(d); return std::move(*this); }
  Spec&& Aliases(std::vector<std::string> a) && { s_.aliases = std::move(a); return std::move(*this); }
  // A text option whose flag alone means "true" (ModelOpt's `type=bool` options: `--x`, `--x False`).
  Spec&& Flagged() && { s_.implicit_value = "true"; return std::move(*this); }

  // A whole number stored in an int64_t / int field, at least `min`, at most `digits` digits.
  Spec&& Int(int64_t min, int digits, int64_t QuantizeOptions::*field) && {
    s_.kind = Kind::kInt;
    s_.min_value = min;
    s_.max_digits = digits;
    const std::string flag = fmt::format("--{}", s_.name);
    s_.apply = [=](QuantizeSettings& s, const std::vector<std::string>& v) {
      s.options.*field = ParseCount(flag, v.at(0), min, digits);
    };
    s_.show = [field](const QuantizeSettings& s) { return fmt::format("{}", s.options.*field); };
    return std::move(*this);
  }
  Spec&& Int32(int64_t min, int digits, int QuantizeOptions::*field) && {
    s_.kind = Kind::kInt;
    s_.min_value = min;
    s_.max_digits = digits;
    const std::string flag = fmt::format("--{}", s_.name);
    s_.apply = [=](QuantizeSettings& s, const std::vector<std::string>& v) {
      s.options.*field = static_cast<int>(ParseCount(flag, v.at(0), min, digits));
    };
    s_.show = [field](const QuantizeSettings& s) { return fmt::format("{}", s.options.*field); };
    return std::move(*this);
  }
  template <typename F>
  Spec&& Apply(F f) && {
    s_.apply = [f](QuantizeSettings& s, const std::vector<std::string>& v) { f(s, v.at(0)); };
    return std::move(*this);
  }
  template <typename F>
  Spec&& ApplyList(F f) && {
    s_.apply = f;
    return std::move(*this);
  }
  template <typename F>
  Spec&& Show(F f) && {
    s_.show = f;
    return std::move(*this);
  }

  OptionSpec& spec() { return s_; }

 private:
  OptionSpec s_;
};

// One word or path in a string field (nullptr: the caller gives Apply and Show).
inline Spec Text(std::string name, std::string QuantizeOptions::*field, std::string help) {
  Spec b(std::move(name), Kind::kText, std::move(help));
  if (field) {
    b.spec().apply = [field](QuantizeSettings& s, const std::vector<std::string>& v) { s.options.*field = v.at(0); };
    b.spec().show = [field](const QuantizeSettings& s) { return s.options.*field; };
  }
  return b;
}

inline Spec Flag(std::string name, bool QuantizeOptions::*field, std::string help) {
  Spec b(std::move(name), Kind::kFlag, std::move(help));
  const std::string flag = fmt::format("--{}", b.spec().name);
  if (field) {
    b.spec().apply = [=](QuantizeSettings& s, const std::vector<std::string>& v) {
      s.options.*field = v.empty() || ParseBoolWord(flag, v[0]);
    };
  }
  b.spec().show = [field](const QuantizeSettings& s) {
    return std::string(field && s.options.*field ? "true" : "false");
  };
  return b;
}

inline Spec Real(std::string name, double QuantizeOptions::*field, std::string help) {
  Spec b(std::move(name), Kind::kReal, std::move(help));
  const std::string flag = fmt::format("--{}", b.spec().name);
  b.spec().apply = [=](QuantizeSettings& s, const std::vector<std::string>& v) {
    s.options.*field = ParseReal(flag, v.at(0));
  };
  b.spec().show = [field](const QuantizeSettings& s) { return fmt::format("{}", s.options.*field); };
  return b;
}

// One or more words or paths; repeated flags add to the list.
inline Spec List(std::string name, std::vector<std::string> QuantizeOptions::*field, std::string help) {
  Spec b(std::move(name), Kind::kList, std::move(help));
  if (field) {
    b.spec().apply = [field](QuantizeSettings& s, const std::vector<std::string>& v) { s.options.*field = v; };
    b.spec().show = [field](const QuantizeSettings& s) { return fmt::format("{}", fmt::join(s.options.*field, " ")); };
  } else {
    b.spec().show = [](const QuantizeSettings&) { return std::string(); };
  }
  return b;
}

// --<list>_file F: more entries for a list option, one a line, taken literally.
Spec ListFile(const std::string& list_name, std::vector<std::string> QuantizeOptions::*field);

// A ModelOpt flag ptqkit does not take: accepted by the parser, then refused with `reason`.
Spec Refused(std::string name, Kind kind, std::string reason);

// --input_shapes_profile: ModelOpt's JSON list of string-to-string objects, inline or in a file.
std::vector<std::map<std::string, std::string>> ParseShapesProfile(const std::string& text);

}  // namespace ptqkit::options
