#include "report/picker_output.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ptqkit/error.h"

namespace ptqkit::sensitivity {
namespace {

using ::testing::HasSubstr;

RankedEntry Entry(const std::string& name, bool is_block, double max, double sum, size_t members) {
  RankedEntry e;
  e.name = name;
  e.is_block = is_block;
  e.max_score = max;
  e.sum_score = sum;
  e.mean_score = sum / static_cast<double>(members);
  e.score = max;
  for (size_t i = 0; i < members; ++i) e.members.push_back(name + "/" + std::to_string(i));
  return e;
}

PickResult ReferenceLikePick() {
  PickResult p;
  p.block_mode = true;
  p.block_agg = "max";
  p.cut = 3;
  p.cut_rule = "threshold=0.1";
  p.ranking = {Entry("blocks.8", true, 6.737, 24.97, 4),
               Entry("/norm/LayerNormalization", false, 4.1053, 4.1053, 1),
               Entry("blocks.7", true, 0.857, 1.85, 3),
               Entry("/patch_embed/proj/Conv", false, 0.0001, 0.0001, 1),
               Entry("/head/Gemm", false, 0.0, 0.0, 1)};
  return p;
}

TEST(PickerOutputTest, BlockRankingTableInTheReferenceShape) {
  const std::string expected =
      "Block ranking (kl_div, sorted by max_agg):\n"
      "  Group                      max_agg    sum_agg\n"
      "  blocks.8                  6.737      24.97      <-- highest impact\n"
      "  /norm/LayerNormalization  4.105       4.11\n"
      "  blocks.7                  0.857       1.85      <-- last included at threshold=0.1\n"
      "  /patch_embed/proj/Conv    1.00e-04    1.0e-04\n"
      "  /head/Gemm                0           0         <-- lowest impact\n";
  EXPECT_EQ(RenderBlockRanking(ReferenceLikePick(), "kl_div"), expected);
}

TEST(PickerOutputTest, BlockRankingMarksCollidingSingletonsAndEmptySelections) {
  PickResult p;
  p.block_mode = true;
  p.block_agg = "mean";
  p.cut = 0;
  p.cut_rule = "coverage=0";
  p.ranking = {Entry("g", true, 1.0, 1.5, 2), Entry("g", false, 0.5, 0.5, 1)};
  const std::string expected =
      "Block ranking (cos, sorted by mean_agg):\n"
      "  Group     max_agg   sum_agg   mean_agg\n"
      "  g           1.000      1.50      0.750   <-- highest impact\n"
      "  g (node)    0.500      0.50      0.500   <-- lowest impact\n"
      "  (no group selected at coverage=0)\n";
  EXPECT_EQ(RenderBlockRanking(p, "cos"), expected);
}

TEST(PickerOutputTest, SummaryInTheReferenceShape) {
  ExclusionSummary s;
  s.coverage_pct = 99.8612;
  s.num_excluded = 101;
  s.num_previously_quantized = 244;
  s.num_remaining_quantized = 143;
  s.excluded_mass = 30.5;
  s.total_mass = 30.5425;
  PickResult p;
  p.block_mode = true;
  p.cut = 6;
  for (int i = 0; i < 6; ++i) p.ranking.push_back(Entry("g" + std::to_string(i), i != 4, 1, 1, 1));
  p.ranking.push_back(Entry("rest", true, 0, 0, 1));
  const std::string expected =
      "summarize_exclusion:\n"
      "  coverage_pct              99.86\n"
      "  num_excluded             101 (5 block group(s) + 1 singleton(s))\n"
      "  num_previously_quantized 244\n"
      "  num_remaining_quantized  143\n"
      "  excluded_mass             30.500\n"
      "  total_mass                30.543\n";
  EXPECT_EQ(RenderSummary(s, &p), expected);
  // Without blocks there is no group split.
  EXPECT_THAT(RenderSummary(s, nullptr), HasSubstr("  num_excluded             101\n"));
}

TEST(PickerOutputTest, ShellQuoting) {
  EXPECT_EQ(ShellQuote("/blocks/blocks.0/attn/MatMul_1"), "/blocks/blocks.0/attn/MatMul_1");
  EXPECT_EQ(ShellQuote("has space"), "'has space'");
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
  EXPECT_EQ(ShellQuote("a$b*"), "'a$b*'");
  EXPECT_EQ(ShellQuote(""), "''");
}

TEST(PickerOutputTest, ExcludeArgsFollowTheGranularity) {
  EXPECT_EQ(RenderExcludeArgs({"/a/MatMul", "/b c"}, "node"),
            "--nodes_to_exclude /a/MatMul '/b c'");
  EXPECT_EQ(RenderExcludeArgs({"Add", "Mul"}, "op_type"), "--op_types_to_exclude Add Mul");
  EXPECT_EQ(RenderExcludeArgs({}, "node"), "");
  EXPECT_THROW(RenderExcludeArgs({"x"}, "layer"), Error);
}

TEST(PickerOutputTest, JsonCarriesListSummaryAndRanking) {
  const std::map<std::string, double> scores = {{"/a", 3.0}, {"/b", 1.0}, {"/ghost", 0.0}};
  PickerOptions o;
  o.coverage = 0.75;
  const PickResult pick = SuggestExclusion(scores, o);
  const ExclusionSummary summary = SummarizeExclusion(scores, {"/a", "/nope"});
  const nlohmann::json j = ExclusionJson(pick, summary, "node");
  EXPECT_EQ(j.at("excluded"), nlohmann::json({"/a"}));
  EXPECT_EQ(j.at("granularity"), "node");
  EXPECT_EQ(j.at("cut_rule"), "coverage=0.75");
  EXPECT_EQ(j.at("summary").at("num_excluded"), 1);
  EXPECT_EQ(j.at("summary").at("num_previously_quantized"), 3);
  EXPECT_DOUBLE_EQ(j.at("summary").at("coverage_pct").get<double>(), 75.0);
  ASSERT_EQ(j.at("ranking").size(), 3u);
  EXPECT_EQ(j.at("ranking")[0].at("selected"), true);
  EXPECT_EQ(j.at("ranking")[1].at("selected"), false);
  EXPECT_TRUE(j.at("block_agg").is_null());
  ASSERT_EQ(j.at("warnings").size(), 1u);  // the unknown name from the summary
  EXPECT_THAT(j.at("warnings")[0].get<std::string>(), HasSubstr("/nope"));
}

}  // namespace
}  // namespace ptqkit::sensitivity
