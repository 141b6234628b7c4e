// The picker's options (`ptqkit exclude` and ptqkit.sensitivity.suggest_exclusion), one
// declaration each: the CLI's flags (cli/exclude_command.cc), Python's keywords and their defaults
// (python/src/module.cc exposes the table) and the README are made from it, and the defaults are
// PickerOptions' own (ptqkit/picker.h), which the scan's settling cut reads too. Adding an option
// is a field in PickerOptions, a row here and its use in the picker. `blocks` is not a row: the CLI
// reads it from a file and Python takes the mapping itself.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ptqkit/picker.h"

namespace ptqkit::options {

struct PickerOptionSpec {
  std::string name = {};     // --name on the CLI, the keyword in Python
  std::string metavar = {};  // shown after the flag
  std::string help = {};
  std::vector<std::string> choices = {};  // the accepted words (empty: any)
  std::string excludes = {};  // the CLI refuses both together (Python: the picker's own precedence)
  // Stores the value given as text (Python's value written as text; "none" clears an optional
  // one); throws ptqkit::Error naming the option for a bad value.
  std::function<void(PickerOptions&, const std::string&)> apply = {};
  // The value as the CLI would write it ("none" for an optional one not set).
  std::function<std::string(const PickerOptions&)> show = {};
};

// Every picker option, in --help order.
const std::vector<PickerOptionSpec>& PickerOptionTable();

// PickerOptions with the values `given` (option name -> text) applied in table order. Throws
// ptqkit::Error for an unknown name or a bad value.
PickerOptions ApplyPickerOptions(const std::map<std::string, std::string>& given, PickerOptions options = {});

}  // namespace ptqkit::options
