// The option table: one declaration per option, choices read from the method, format and runtime
// tables, and values parsed with one set of rules (errors name the option).
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "calib/method.h"
#include "options/option_spec.h"
#include "options/picker_option_table.h"
#include "quant/formats/formats.h"
#include "quant/placement/runtime_forms.h"

namespace ptqkit::options {
namespace {

const OptionSpec& Spec(const std::string& name) {
  const OptionSpec* spec = FindQuantizeOption(name);
  if (spec == nullptr) throw std::runtime_error("no option " + name);
  return *spec;
}

TEST(OptionTable, NamesAndAliasesAreUniqueAndEveryOptionIsDocumented) {
  std::set<std::string> seen;
  for (const OptionSpec& spec : QuantizeOptionTable()) {
    EXPECT_TRUE(seen.insert(spec.name).second) << spec.name << " declared twice";
    for (const auto& alias : spec.aliases) EXPECT_TRUE(seen.insert(alias).second) << alias << " declared twice";
    EXPECT_FALSE(spec.help.empty()) << spec.name << " has no help line";
    EXPECT_TRUE(spec.refusal.empty() == static_cast<bool>(spec.apply)) << spec.name << ": taken or refused, not both";
  }
  EXPECT_GT(seen.size(), 60u);
}

TEST(OptionTable, ChoicesComeFromTheMethodFormatAndRuntimeTables) {
  EXPECT_EQ(Spec("calibration_method").choices, calib::AcceptedMethodSpellings());
  std::set<std::string> modes(Spec("quantize_mode").choices.begin(), Spec("quantize_mode").choices.end());
  for (const QuantFormat* f : AllFormats()) EXPECT_TRUE(modes.count(std::string(f->name))) << f->name;
  const std::vector<std::string>& runtimes = Spec("target_runtime").choices;
  const std::vector<std::string> forms = RuntimeFormNames();
  EXPECT_EQ(std::set<std::string>(runtimes.begin(), runtimes.end()), std::set<std::string>(forms.begin(), forms.end()));
}

TEST(OptionTable, ModelOptsRoundToNearestSpellingIsRead) {
  QuantizeSettings settings;
  ApplyOption(Spec("calibration_method"), {"rtn_dq"}, settings);
  EXPECT_EQ(settings.options.calibration_method, "rtn");
  ApplyOption(Spec("calibration_method"), {"entropy"}, settings);
  EXPECT_EQ(settings.options.calibration_method, "entropy");
}

TEST(OptionTable, BadValuesNameTheOption) {
  QuantizeSettings settings;
  try {
    ApplyOption(Spec("calibration_batch_size"), {"eight"}, settings);
    FAIL() << "a count that is not a number was taken";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--calibration_batch_size"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ApplyOption(Spec("model_id"), {"bert"}, settings), Error) << "a refused ModelOpt flag";
}

TEST(OptionTable, BooleanWordsFollowOneRule) {
  EXPECT_TRUE(ParseBoolWord("--canonicalize", "TRUE"));
  EXPECT_TRUE(ParseBoolWord("--canonicalize", "1"));
  EXPECT_FALSE(ParseBoolWord("--canonicalize", "false"));
  EXPECT_FALSE(ParseBoolWord("--canonicalize", "0"));
  EXPECT_THROW(ParseBoolWord("--canonicalize", "maybe"), Error);
}

TEST(OptionTable, PythonKeywordsApplyLikeFlags) {
  QuantizeSettings settings;
  ApplyGivenOptions({{"quantize_mode", {"fp8"}}, {"nodes_to_exclude", {"a", "b"}}}, kQuantize, settings);
  EXPECT_EQ(settings.options.quantize_mode, "fp8");
  EXPECT_EQ(settings.options.nodes_to_exclude, (std::vector<std::string>{"a", "b"}));
}

}  // namespace
}  // namespace ptqkit::options

namespace ptqkit::options {
namespace {

TEST(PickerOptionTable, DefaultsAreThePickersOwnAndValuesParseByOneRule) {
  const PickerOptions defaults;
  std::map<std::string, std::string> shown;
  for (const PickerOptionSpec& spec : PickerOptionTable()) shown[spec.name] = spec.show(defaults);
  EXPECT_EQ(shown.at("coverage"), "0.9");
  EXPECT_EQ(shown.at("threshold"), "none");
  EXPECT_EQ(shown.at("near_tie_ratio"), "0.99");
  EXPECT_EQ(shown.at("block_agg"), "sum");
  const PickerOptions o = ApplyPickerOptions({{"max_nodes", "3"}, {"near_tie_ratio", "none"}, {"threshold", "0.25"}});
  EXPECT_EQ(o.max_nodes, 3);
  EXPECT_FALSE(o.near_tie_ratio.has_value());
  EXPECT_EQ(o.threshold, 0.25);
  EXPECT_EQ(o.coverage, defaults.coverage);
}

TEST(PickerOptionTable, BadValuesAndUnknownNamesAreRefusedByName) {
  for (const auto& [name, value] : std::map<std::string, std::string>{
           {"max_nodes", "-1"}, {"coverage", "most"}, {"block_agg", "median"}, {"near_tie_ratio", "high"}}) {
    try {
      ApplyPickerOptions({{name, value}});
      ADD_FAILURE() << name << "=" << value << " was taken";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(name == "block_agg" ? "median" : name), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(ApplyPickerOptions({{"coverge", "0.5"}}), Error);
}

}  // namespace
}  // namespace ptqkit::options
