#include "ptqkit/picker.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ptqkit/error.h"
#include "sensitivity/scores_file.h"

namespace ptqkit {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

using Names = std::vector<std::string>;

// a=5, b=3, c=1, d=1: total 10; c and d tie, so c (name order) ranks before d.
const std::map<std::string, double> kScores = {{"d", 1.0}, {"b", 3.0}, {"c", 1.0}, {"a", 5.0}};

PickerOptions Coverage(double coverage) {
  PickerOptions o;
  o.coverage = coverage;
  return o;
}

PickerOptions Threshold(double threshold) {
  PickerOptions o;
  o.threshold = threshold;
  return o;
}

std::string ErrorOf(const std::map<std::string, double>& scores, const PickerOptions& options) {
  try {
    SuggestExclusion(scores, options);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(PickerTest, RanksByScoreThenName) {
  const PickResult r = SuggestExclusion(kScores, Coverage(1.0));
  ASSERT_EQ(r.ranking.size(), 4u);
  EXPECT_EQ(r.ranking[0].name, "a");
  EXPECT_EQ(r.ranking[1].name, "b");
  EXPECT_EQ(r.ranking[2].name, "c");
  EXPECT_EQ(r.ranking[3].name, "d");
  EXPECT_FALSE(r.block_mode);
}

TEST(PickerTest, CoverageTakesThePrefixWithinTheBudget) {
  // Budget 9: a (5), b (8), c (9, exactly at the budget: taken), d would make 10.
  EXPECT_THAT(SuggestExclusion(kScores, Coverage(0.9)).excluded, ElementsAre("a", "b", "c"));
  // Budget 5: a (5), b would make 8.
  const PickResult half = SuggestExclusion(kScores, Coverage(0.5));
  EXPECT_THAT(half.excluded, ElementsAre("a"));
  EXPECT_EQ(half.cut, 1u);
  EXPECT_EQ(half.cut_rule, "coverage=0.5");
  // Budget 7.9: b would make 8, so only a, even though c alone would still fit (rank prefix).
  EXPECT_THAT(SuggestExclusion(kScores, Coverage(0.79)).excluded, ElementsAre("a"));
}

TEST(PickerTest, CoverageZeroExcludesNothingAndOneExcludesEveryPositiveScore) {
  EXPECT_THAT(SuggestExclusion(kScores, Coverage(0.0)).excluded, IsEmpty());
  std::map<std::string, double> scores = kScores;
  scores["zero"] = 0.0;
  EXPECT_THAT(SuggestExclusion(scores, Coverage(1.0)).excluded, ElementsAre("a", "b", "c", "d"));
}

TEST(PickerTest, CoverageThatSelectsNothingBecauseOfADominantTargetWarns) {
  const std::map<std::string, double> dominant = {{"big", 98.0}, {"small", 2.0}};
  const PickResult r = SuggestExclusion(dominant, Coverage(0.9));
  EXPECT_THAT(r.excluded, IsEmpty());
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_THAT(r.warnings[0], AllOf(HasSubstr("selects nothing"), HasSubstr("'big'"), HasSubstr("98.0%")));
  // Coverage 0 asks for nothing: no warning.
  EXPECT_THAT(SuggestExclusion(dominant, Coverage(0.0)).warnings, IsEmpty());
}

TEST(PickerTest, CoverageToleratesRounding) {
  // 0.6 + 0.3 = 0.8999999999999999 and 0.9 x total rounds differently; the prefix whose exact sum
  // equals the budget is still taken.
  const std::map<std::string, double> scores = {{"x", 0.6}, {"y", 0.3}, {"z", 0.1}};
  EXPECT_THAT(SuggestExclusion(scores, Coverage(0.9)).excluded, ElementsAre("x", "y"));
  const std::map<std::string, double> tenths = {{"p", 0.1}, {"q", 0.1}, {"r", 0.1}};
  EXPECT_THAT(SuggestExclusion(tenths, Coverage(1.0)).excluded, ElementsAre("p", "q", "r"));
}

TEST(PickerTest, ZeroScoresAreNeverExcludedByDefault) {
  const std::map<std::string, double> scores = {{"a", 1.0}, {"z", 0.0}};
  EXPECT_THAT(SuggestExclusion(scores, Coverage(1.0)).excluded, ElementsAre("a"));
  EXPECT_THAT(SuggestExclusion(scores, Threshold(0.0)).excluded, ElementsAre("a"));
  const std::map<std::string, double> all_zero = {{"a", 0.0}, {"b", 0.0}};
  EXPECT_THAT(SuggestExclusion(all_zero, Coverage(1.0)).excluded, IsEmpty());
  // A negative floor lets zeros through.
  PickerOptions o = Coverage(1.0);
  o.min_score_floor = -1.0;
  EXPECT_THAT(SuggestExclusion(scores, o).excluded, ElementsAre("a", "z"));
}

TEST(PickerTest, EmptyScoresGiveAnEmptyResult) {
  for (const PickerOptions& o : {Coverage(0.9), Coverage(1.0), Threshold(0.1)}) {
    const PickResult r = SuggestExclusion({}, o);
    EXPECT_THAT(r.excluded, IsEmpty());
    EXPECT_THAT(r.ranking, IsEmpty());
    EXPECT_THAT(r.warnings, IsEmpty());
    EXPECT_EQ(r.cut, 0u);
  }
  PickerOptions blocks = Coverage(0.9);
  blocks.blocks = {{"g", {"^/g/"}}};
  EXPECT_THAT(SuggestExclusion({}, blocks).excluded, IsEmpty());
}

TEST(PickerTest, ThresholdTakesScoresStrictlyAbove) {
  const PickResult r = SuggestExclusion(kScores, Threshold(1.0));
  EXPECT_THAT(r.excluded, ElementsAre("a", "b"));
  EXPECT_EQ(r.cut_rule, "threshold=1");
  EXPECT_THAT(SuggestExclusion(kScores, Threshold(0.5)).excluded, ElementsAre("a", "b", "c", "d"));
}

TEST(PickerTest, ThresholdAboveAllScoresExcludesNothing) {
  EXPECT_THAT(SuggestExclusion(kScores, Threshold(5.0)).excluded, IsEmpty());
  EXPECT_THAT(SuggestExclusion(kScores, Threshold(100.0)).excluded, IsEmpty());
}

TEST(PickerTest, ThresholdOverridesCoverage) {
  PickerOptions o = Threshold(2.0);
  o.coverage = 0.0;  // would exclude nothing on its own
  EXPECT_THAT(SuggestExclusion(kScores, o).excluded, ElementsAre("a", "b"));
  o.coverage = 1.0;  // would exclude everything on its own
  EXPECT_THAT(SuggestExclusion(kScores, o).excluded, ElementsAre("a", "b"));
}

TEST(PickerTest, MaxNodesCapsTheSelection) {
  PickerOptions o = Coverage(1.0);
  o.max_nodes = 2;
  const PickResult r = SuggestExclusion(kScores, o);
  EXPECT_THAT(r.excluded, ElementsAre("a", "b"));
  EXPECT_EQ(r.cut_rule, "max_nodes=2");
  o.max_nodes = 0;
  EXPECT_THAT(SuggestExclusion(kScores, o).excluded, IsEmpty());
  o.max_nodes = 10;  // not binding
  EXPECT_EQ(SuggestExclusion(kScores, o).cut_rule, "coverage=1");
}

TEST(PickerTest, MinScoreFloorKeepsLowScoresQuantized) {
  PickerOptions o = Coverage(1.0);
  o.min_score_floor = 1.0;  // c and d score exactly the floor: not excluded
  const PickResult r = SuggestExclusion(kScores, o);
  EXPECT_THAT(r.excluded, ElementsAre("a", "b"));
  EXPECT_EQ(r.cut_rule, "min_score_floor=1");
  o = Threshold(0.5);
  o.min_score_floor = 3.0;
  EXPECT_THAT(SuggestExclusion(kScores, o).excluded, ElementsAre("a"));
}

TEST(PickerTest, NearTieWarningNamesBothTargetsAndTheRatio) {
  // The cut at coverage 0.9 falls between c (taken) and d (left out), both 1.0.
  const PickResult r = SuggestExclusion(kScores, Coverage(0.9));
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_THAT(r.warnings[0], AllOf(HasSubstr("near tie"), HasSubstr("'c'"), HasSubstr("'d'"),
                                   HasSubstr("near_tie_ratio=0.99"), HasSubstr("1.0000")));
  PickerOptions silent = Coverage(0.9);
  silent.near_tie_ratio = std::nullopt;
  EXPECT_THAT(SuggestExclusion(kScores, silent).warnings, IsEmpty());
}

TEST(PickerTest, NearTieRespectsTheRatio) {
  const std::map<std::string, double> scores = {{"a", 1.0}, {"b", 0.995}, {"c", 0.5}};
  PickerOptions o;
  o.max_nodes = 1;
  EXPECT_EQ(SuggestExclusion(scores, o).warnings.size(), 1u);  // 0.995 >= 0.99 x 1
  o.near_tie_ratio = 0.999;
  EXPECT_THAT(SuggestExclusion(scores, o).warnings, IsEmpty());  // 0.995 < 0.999 x 1
  // A clear gap gives no warning.
  EXPECT_THAT(SuggestExclusion(kScores, Coverage(0.5)).warnings, IsEmpty());
}

TEST(PickerTest, NegativeScoresAreClampedWithAWarning) {
  const std::map<std::string, double> scores = {{"a", 1.0}, {"neg", -0.5}};
  const PickResult r = SuggestExclusion(scores, Coverage(1.0));
  EXPECT_THAT(r.excluded, ElementsAre("a"));
  ASSERT_EQ(r.ranking.size(), 2u);
  EXPECT_EQ(r.ranking[1].score, 0.0);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_THAT(r.warnings[0], AllOf(HasSubstr("'neg'"), HasSubstr("negative")));
}

TEST(PickerTest, NonFiniteScoresAreErrorsNamingTheTarget) {
  EXPECT_THAT(ErrorOf({{"a", 1.0}, {"bad", std::nan("")}}, Coverage(0.9)), HasSubstr("'bad'"));
  EXPECT_THAT(ErrorOf({{"inf", std::numeric_limits<double>::infinity()}}, Coverage(0.9)),
              HasSubstr("'inf'"));
}

TEST(PickerTest, InvalidOptionsAreErrors) {
  EXPECT_THAT(ErrorOf(kScores, Coverage(1.5)), HasSubstr("coverage must be between 0 and 1"));
  EXPECT_THAT(ErrorOf(kScores, Coverage(-0.1)), HasSubstr("coverage"));
  EXPECT_THAT(ErrorOf(kScores, Coverage(std::nan(""))), HasSubstr("coverage"));
  EXPECT_THAT(ErrorOf(kScores, Threshold(-1.0)), HasSubstr("threshold must be"));
  PickerOptions o;
  o.max_nodes = -1;
  EXPECT_THAT(ErrorOf(kScores, o), HasSubstr("max_nodes"));
  o = PickerOptions();
  o.near_tie_ratio = 1.5;
  EXPECT_THAT(ErrorOf(kScores, o), HasSubstr("near_tie_ratio"));
  o = PickerOptions();
  o.block_agg = "median";
  EXPECT_THAT(ErrorOf(kScores, o), AllOf(HasSubstr("'median'"), HasSubstr("sum, max, mean")));
  o.blocks = {{"g", {"^a"}}};
  EXPECT_THAT(ErrorOf(kScores, o), HasSubstr("'median'"));
  o = PickerOptions();
  o.blocks = {{"broken", {"^/ok/", "/blocks/([0-9"}}};
  EXPECT_THAT(ErrorOf(kScores, o), AllOf(HasSubstr("'broken'"), HasSubstr("'/blocks/([0-9'"),
                                         HasSubstr("regular expression")));
  o.blocks = {{"g", {"^a"}}, {"g", {"^b"}}};
  EXPECT_THAT(ErrorOf(kScores, o), HasSubstr("'g' is given twice"));
}

// --- blocks ---

TEST(PickerBlocksTest, FirstMatchingGroupWinsWhenPatternsOverlap) {
  const std::map<std::string, double> scores = {
      {"/b0/attn/MatMul", 1.0}, {"/b0/mlp/MatMul", 2.0}, {"/head/Gemm", 0.5}};
  PickerOptions o = Coverage(1.0);
  o.blocks = {{"attn", {"^/b0/attn/"}}, {"b0", {"^/b0/"}}};
  PickResult r = SuggestExclusion(scores, o);
  ASSERT_EQ(r.ranking.size(), 3u);
  EXPECT_EQ(r.ranking[0].name, "b0");
  EXPECT_THAT(r.ranking[0].members, ElementsAre("/b0/mlp/MatMul"));
  EXPECT_EQ(r.ranking[1].name, "attn");
  EXPECT_THAT(r.ranking[1].members, ElementsAre("/b0/attn/MatMul"));
  EXPECT_EQ(r.ranking[2].name, "/head/Gemm");
  EXPECT_FALSE(r.ranking[2].is_block);
  EXPECT_TRUE(r.block_mode);

  // The other order: b0 takes both MatMuls, attn matches nothing (and says so).
  o.blocks = {{"b0", {"^/b0/"}}, {"attn", {"^/b0/attn/"}}};
  r = SuggestExclusion(scores, o);
  ASSERT_EQ(r.ranking.size(), 2u);
  EXPECT_EQ(r.ranking[0].name, "b0");
  EXPECT_THAT(r.ranking[0].members, ElementsAre("/b0/mlp/MatMul", "/b0/attn/MatMul"));
  EXPECT_DOUBLE_EQ(r.ranking[0].score, 3.0);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_THAT(r.warnings[0], AllOf(HasSubstr("'attn'"), HasSubstr("matches no scored target")));
}

TEST(PickerBlocksTest, RegexSearchIsUnanchoredUnlessThePatternSaysSo) {
  const std::map<std::string, double> scores = {{"/x/attn/MatMul", 1.0}, {"attn_out", 1.0}};
  PickerOptions o = Coverage(1.0);
  o.blocks = {{"anchored", {"^attn"}}, {"anywhere", {"attn/"}}};
  const PickResult r = SuggestExclusion(scores, o);
  ASSERT_EQ(r.ranking.size(), 2u);
  EXPECT_EQ(r.ranking[0].name, "anchored");
  EXPECT_THAT(r.ranking[0].members, ElementsAre("attn_out"));
  EXPECT_EQ(r.ranking[1].name, "anywhere");
  EXPECT_THAT(r.ranking[1].members, ElementsAre("/x/attn/MatMul"));
}

TEST(PickerBlocksTest, AggregationChangesTheRanking) {
  // A {3,3,3}: sum 9, max 3, mean 3.   B {5}: sum 5, max 5, mean 5.
  // C {6,.1,.1,.1}: sum 6.3, max 6, mean 1.575.
  const std::map<std::string, double> scores = {{"/A/0", 3.0}, {"/A/1", 3.0}, {"/A/2", 3.0},
                                                {"/B/0", 5.0}, {"/C/0", 6.0}, {"/C/1", 0.1},
                                                {"/C/2", 0.1}, {"/C/3", 0.1}};
  PickerOptions o = Coverage(1.0);
  o.blocks = {{"A", {"^/A/"}}, {"B", {"^/B/"}}, {"C", {"^/C/"}}};
  auto order = [&](const std::string& agg) {
    o.block_agg = agg;
    Names names;
    for (const auto& e : SuggestExclusion(scores, o).ranking) names.push_back(e.name);
    return names;
  };
  EXPECT_THAT(order("sum"), ElementsAre("A", "C", "B"));
  EXPECT_THAT(order("max"), ElementsAre("C", "B", "A"));
  EXPECT_THAT(order("mean"), ElementsAre("B", "A", "C"));

  o.block_agg = "max";
  const PickResult r = SuggestExclusion(scores, o);
  EXPECT_EQ(r.block_agg, "max");
  EXPECT_DOUBLE_EQ(r.ranking[0].score, 6.0);
  EXPECT_DOUBLE_EQ(r.ranking[0].max_score, 6.0);
  EXPECT_DOUBLE_EQ(r.ranking[0].sum_score, 6.3);
  EXPECT_DOUBLE_EQ(r.ranking[0].mean_score, 1.575);
  EXPECT_THAT(r.ranking[0].members, ElementsAre("/C/0", "/C/1", "/C/2", "/C/3"));
}

TEST(PickerBlocksTest, SelectionIsTheUnionOfMembersOfTheSelectedGroups) {
  const std::map<std::string, double> scores = {
      {"/A/a2", 1.0}, {"/A/a1", 3.0}, {"/B/b1", 2.0}, {"/lone", 0.5}, {"/A/zero", 0.0}};
  PickerOptions o = Threshold(1.5);
  o.blocks = {{"A", {"^/A/"}}, {"B", {"^/B/"}}};
  const PickResult r = SuggestExclusion(scores, o);  // sums: A 4, B 2, /lone 0.5
  EXPECT_EQ(r.cut, 2u);
  // Whole groups go, zero-scored members included; group order, then rank order inside.
  EXPECT_THAT(r.excluded, ElementsAre("/A/a1", "/A/a2", "/A/zero", "/B/b1"));
}

TEST(PickerBlocksTest, CoverageAndMaxNodesApplyToGroups) {
  const std::map<std::string, double> scores = {
      {"/A/0", 2.0}, {"/A/1", 2.0}, {"/B/0", 3.0}, {"/C/0", 0.99}, {"/C/1", 0.0}};
  PickerOptions o = Coverage(1.0);
  o.blocks = {{"A", {"^/A/"}}, {"B", {"^/B/"}}, {"C", {"^/C/"}}};
  o.block_agg = "max";  // A 2, B 3, C 0.99: total 5.99
  o.max_nodes = 1;
  PickResult r = SuggestExclusion(scores, o);
  EXPECT_THAT(r.excluded, ElementsAre("/B/0"));
  EXPECT_EQ(r.cut_rule, "max_nodes=1");
  o.max_nodes = std::nullopt;
  o.coverage = 0.84;  // budget 5.0316: B (3) + A (5) fit, C would make 5.99
  r = SuggestExclusion(scores, o);
  EXPECT_THAT(r.excluded, ElementsAre("/B/0", "/A/0", "/A/1"));
  o.max_nodes = 2;
  o.coverage = 1.0;
  o.block_agg = "mean";  // A 2, B 3, C 0.495
  EXPECT_THAT(SuggestExclusion(scores, o).warnings, IsEmpty());
  o.max_nodes = 1;
  o.blocks = {{"A", {"^/A/"}}, {"B", {"^/B/"}}};
  o.block_agg = "sum";  // A 4, B 3: no tie; with max A 2 < B 3
  EXPECT_THAT(SuggestExclusion(scores, o).excluded, ElementsAre("/A/0", "/A/1"));
}

TEST(PickerBlocksTest, NearTieNamesBothGroups) {
  const std::map<std::string, double> scores = {{"/A/0", 1.0}, {"/B/0", 0.5}, {"/B/1", 0.5}};
  PickerOptions o = Coverage(1.0);
  o.blocks = {{"A", {"^/A/"}}, {"B", {"^/B/"}}};
  o.max_nodes = 1;
  const PickResult r = SuggestExclusion(scores, o);
  EXPECT_THAT(r.excluded, ElementsAre("/A/0"));
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_THAT(r.warnings[0], AllOf(HasSubstr("'A'"), HasSubstr("'B'"), HasSubstr("0.99")));
}

TEST(PickerBlocksTest, SingletonNamedLikeAGroupStaysSeparate) {
  // The node "blocks.1" does not match the group's pattern, so it must not join group "blocks.1".
  const std::map<std::string, double> scores = {
      {"/blocks/blocks.1/MatMul", 1.0}, {"/blocks/blocks.1/Add", 0.5}, {"blocks.1", 2.0}};
  PickerOptions o = Coverage(1.0);
  o.blocks = {{"blocks.1", {"^/blocks/blocks\\.1/"}}};
  o.max_nodes = 1;
  const PickResult r = SuggestExclusion(scores, o);
  ASSERT_EQ(r.ranking.size(), 2u);
  EXPECT_EQ(r.ranking[0].name, "blocks.1");
  EXPECT_FALSE(r.ranking[0].is_block);
  EXPECT_THAT(r.ranking[0].members, ElementsAre("blocks.1"));
  EXPECT_EQ(r.ranking[1].name, "blocks.1");
  EXPECT_TRUE(r.ranking[1].is_block);
  EXPECT_THAT(r.ranking[1].members, ElementsAre("/blocks/blocks.1/MatMul", "/blocks/blocks.1/Add"));
  EXPECT_THAT(r.excluded, ElementsAre("blocks.1"));
  bool warned = false;
  for (const auto& w : r.warnings) warned |= w.find("separate singleton") != std::string::npos;
  EXPECT_TRUE(warned);
}

TEST(PickerBlocksTest, GroupRanksBeforeASingletonOfTheSameNameAndScore) {
  const std::map<std::string, double> scores = {{"/g/x", 1.0}, {"g", 1.0}};
  PickerOptions o = Coverage(1.0);
  o.blocks = {{"g", {"^/g/"}}};
  o.max_nodes = 1;
  const PickResult r = SuggestExclusion(scores, o);
  ASSERT_EQ(r.ranking.size(), 2u);
  EXPECT_TRUE(r.ranking[0].is_block);
  EXPECT_FALSE(r.ranking[1].is_block);
  EXPECT_THAT(r.excluded, ElementsAre("/g/x"));
}

// --- summarize ---

TEST(PickerTest, NonFiniteTargetsAreAlwaysExcludedFirst) {
  std::map<std::string, double> scores = kScores;
  scores["nan2"] = kNonFiniteScore;
  scores["nan1"] = kNonFiniteScore;
  // The coverage budget is computed on the finite scores only (a: 5 of 10).
  EXPECT_THAT(SuggestExclusion(scores, Coverage(0.5)).excluded, ElementsAre("nan1", "nan2", "a"));
  PickerOptions none = Coverage(0.9);
  none.max_nodes = 0;
  const PickResult capped = SuggestExclusion(scores, none);
  EXPECT_THAT(capped.excluded, ElementsAre("nan1", "nan2"));
  EXPECT_THAT(capped.warnings, Contains(HasSubstr("'nan1' is excluded whatever the limits")));
  EXPECT_THAT(SuggestExclusion(scores, Threshold(100.0)).excluded, ElementsAre("nan1", "nan2"));
}

TEST(SummarizeExclusionTest, NonFiniteTargetsAreCountedApartFromTheMass) {
  std::map<std::string, double> scores = kScores;
  scores["nan"] = kNonFiniteScore;
  const ExclusionSummary s = SummarizeExclusion(scores, {"nan", "a"});
  EXPECT_EQ(s.num_non_finite, 1);
  EXPECT_EQ(s.num_excluded, 2);
  EXPECT_DOUBLE_EQ(s.total_mass, 10.0);
  EXPECT_DOUBLE_EQ(s.coverage_pct, 50.0);
}

TEST(SummarizeExclusionTest, CountsAndMass) {
  const ExclusionSummary s = SummarizeExclusion(kScores, {"a", "c"});
  EXPECT_DOUBLE_EQ(s.coverage_pct, 60.0);
  EXPECT_EQ(s.num_excluded, 2);
  EXPECT_EQ(s.num_previously_quantized, 4);
  EXPECT_EQ(s.num_remaining_quantized, 2);
  EXPECT_DOUBLE_EQ(s.excluded_mass, 6.0);
  EXPECT_DOUBLE_EQ(s.total_mass, 10.0);
  EXPECT_THAT(s.warnings, IsEmpty());
}

TEST(SummarizeExclusionTest, UnknownAndDuplicateNamesAreNotCounted) {
  const ExclusionSummary s = SummarizeExclusion(kScores, {"a", "ghost", "a", "b", "b"});
  EXPECT_EQ(s.num_excluded, 2);
  EXPECT_EQ(s.num_remaining_quantized, 2);
  EXPECT_DOUBLE_EQ(s.excluded_mass, 8.0);
  EXPECT_DOUBLE_EQ(s.coverage_pct, 80.0);
  ASSERT_EQ(s.warnings.size(), 2u);
  EXPECT_THAT(s.warnings[0], AllOf(HasSubstr("'ghost'"), HasSubstr("no score")));
  EXPECT_THAT(s.warnings[1],
              AllOf(HasSubstr("'a'"), HasSubstr("'b'"), HasSubstr("more than once")));
}

TEST(SummarizeExclusionTest, EmptyAndZeroMass) {
  const ExclusionSummary empty = SummarizeExclusion({}, {});
  EXPECT_EQ(empty.coverage_pct, 0.0);
  EXPECT_EQ(empty.num_previously_quantized, 0);
  const ExclusionSummary zero = SummarizeExclusion({{"a", 0.0}}, {"a"});
  EXPECT_EQ(zero.coverage_pct, 0.0);
  EXPECT_EQ(zero.num_excluded, 1);
  EXPECT_EQ(zero.num_remaining_quantized, 0);
}

TEST(SummarizeExclusionTest, ExcludingEverythingIsExactlyOneHundredPercent) {
  const std::map<std::string, double> scores = {{"x", 0.1}, {"y", 0.2}, {"z", 0.7}};
  EXPECT_EQ(SummarizeExclusion(scores, {"z", "x", "y"}).coverage_pct, 100.0);
}

TEST(SummarizeExclusionTest, AgreesWithThePicker) {
  const PickResult r = SuggestExclusion(kScores, Coverage(0.9));
  const ExclusionSummary s = SummarizeExclusion(kScores, r.excluded);
  EXPECT_EQ(s.num_excluded, 3);
  EXPECT_DOUBLE_EQ(s.coverage_pct, 90.0);
}

}  // namespace
}  // namespace ptqkit
