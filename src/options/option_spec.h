// One declaration per option. The `ptqkit quantize` / `ptqkit calibrate` flags (cli/option_flags),
// the Python keywords of ptqkit.quantize() (python/src/module.cc turns them into the same text the
// CLI reads), `ptqkit options` and the README's option table are all made from these specs, so an
// option is added in one place: a field in QuantizeOptions and an entry in quantize_option_table.cc.
//
// Every value arrives as text (a CLI argument, or a Python value written as one), and every spec
// parses it with the same rules, so the CLI and Python agree on what a value means and on the error
// a bad one gets.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ptqkit/error.h"
#include "ptqkit/quantize.h"
#include "ptqkit/sensitivity.h"

namespace ptqkit::options {

// What `ptqkit sensitivity` (and ptqkit.sensitivity.score()) takes besides the data, calibration
// and runtime options it shares with quantize: the scan's own choices and where its results go.
// The shared options live in QuantizeSettings::options (one declaration, one parser) and reach the
// scan through scan/scan_options.h.
struct ScanSettings {
  SensitivityOptions options;  // granularity, metric, target_precision, op_types_scope, ...
  std::string shard;           // "K/N": score only every N-th target from K, write a part file
  std::vector<std::string> merge;  // part files to merge into the scores file
  std::string output_json;     // the scores file ("": <model>.sensitivity.json beside the model)
  std::string report;          // the HTML report ("": none)
  bool show_zero_scores = false;
};

// What a front end needs besides QuantizeOptions: logging is process-wide state that the CLI and
// the Python binding set around a run, not an input of the library; `scan` holds what only the
// sensitivity command reads.
struct QuantizeSettings {
  QuantizeOptions options;
  ScanSettings scan;
  std::string log_level = "INFO";
  std::string log_file;
};

enum class Kind {
  kFlag,  // no value (Python: bool)
  kInt,   // one whole number
  kReal,  // one finite number
  kText,  // one word or path
  kList,  // one or more words or paths (Python: a list, or one string)
};

// Which subcommands take an option.
enum Command : unsigned { kQuantize = 1u, kCalibrate = 2u, kSensitivity = 4u };

struct OptionSpec {
  std::string name;  // --name on the CLI, the keyword in Python
  Kind kind = Kind::kText;
  std::string metavar;  // shown after the flag in the README ("M", "N", "T ...")
  std::string help;     // one line for --help
  std::string details;  // more for the README's table
  // The README's default column when the field's own default does not say it (e.g. "mse (int8/fp8),
  // awq_clip (int4)" for an empty calibration_method).
  std::string default_doc;
  std::vector<std::string> choices;           // kText/kList: the accepted words (empty: any)
  std::optional<std::string> implicit_value;  // kText: the flag alone means this value
  bool is_path = false;                       // Python accepts os.PathLike
  bool python_none_default = false;           // Python shows None: "not given", the library decides
  int64_t min_value = 0;                      // kInt
  int max_digits = 18;                        // kInt
  unsigned commands = kQuantize;
  unsigned required = 0;  // the commands that cannot run without it
  bool cli = true;     // a flag of the CLI
  bool python = true;  // a keyword of ptqkit.quantize()
  std::vector<std::string> aliases;  // other accepted spellings (ModelOpt's Python keyword names)
  // How ModelOpt 0.47's option of the same name differs ("" = same meaning and default).
  std::string modelopt_difference;
  // Not taken: the sentence that says why and what to use instead (apply is then unused).
  std::string refusal;
  // Stores the parsed value; throws ptqkit::Error naming the option for a bad value.
  std::function<void(QuantizeSettings&, const std::vector<std::string>& values)> apply;
  // The current value as the CLI would write it (for defaults in docs and --help).
  std::function<std::string(const QuantizeSettings&)> show;
};

// Every option of `ptqkit quantize` (and the subsets `ptqkit calibrate` and `ptqkit sensitivity`
// take, with the sensitivity scan's own options), in --help order, including the ModelOpt flags
// ptqkit refuses (with their reasons).
const std::vector<OptionSpec>& QuantizeOptionTable();

// The spec whose name or alias is `name`, or nullptr.
const OptionSpec* FindQuantizeOption(const std::string& name);

// Applies one option's values (as text) to `settings`: a refused option throws its refusal, a flag
// ignores values. Throws ptqkit::Error naming the option.
void ApplyOption(const OptionSpec& spec, const std::vector<std::string>& values, QuantizeSettings& settings);
// The Python front end's form: `given` maps option names to the text the CLI would read; every
// Python option of `command` (kQuantize, kSensitivity, ...) it names is applied, in table order
// as the CLI applies its flags.
void ApplyGivenOptions(const std::map<std::string, std::vector<std::string>>& given, unsigned command,
                       QuantizeSettings& settings);

// A value that is not of the option's type (a count that is not a whole number in range): the CLI
// reports it as a usage error (exit code 2), like an unknown flag.
class UsageError : public Error {
 public:
  using Error::Error;
};

// The value parsers the specs use, shared so the CLI and Python read numbers alike.
// What is wrong with `text` as a count (digits only, at least `min_value`, at most `max_digits`
// digits), or "" when nothing is.
std::string CountProblem(const std::string& text, int64_t min_value, int max_digits);
// ParseCount throws UsageError (the CLI's exit code 2); the others ptqkit::Error.
int64_t ParseCount(const std::string& option, const std::string& text, int64_t min_value, int max_digits);
double ParseReal(const std::string& option, const std::string& text);
bool ParseBoolWord(const std::string& option, const std::string& text);  // true/false/1/0 (any case)

}  // namespace ptqkit::options
