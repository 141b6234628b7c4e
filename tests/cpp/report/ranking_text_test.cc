#include "report/ranking_text.h"

#include <gtest/gtest.h>

namespace ptqkit::sensitivity {
namespace {

SensitivityResult ReferenceExample() {
  SensitivityResult r;
  r.metric = "kl_div";
  r.granularity = "op_type";
  r.target_precision = "int8";
  r.calibration_source = "real";
  r.scores = {{"Add", 2.848},
              {"Mul", 1.890},
              {"LayerNormalization", 1.653},
              {"ReduceMean", 1.570},
              {"BatchNormalization", 0.355},
              {"Conv", 0.181},
              {"AveragePool", 0.057},
              {"Sigmoid", 0.039},
              {"MatMul", 0.015},
              {"Gelu", 0.0},
              {"Softmax", 0.0},
              {"GlobalAveragePoolingLongName", 0.0},
              {"Gemm", 0.0}};
  return r;
}

TEST(RankingTextTest, MatchesTheReferenceShape) {
  const std::string expected =
      "Sensitivity scan (int8 / kl_div / op_type):\n"
      "  Add                 2.848  <-- highest impact\n"
      "  Mul                 1.890\n"
      "  LayerNormalization  1.653\n"
      "  ReduceMean          1.570\n"
      "  BatchNormalization  0.355\n"
      "  Conv                0.181\n"
      "  AveragePool         0.057\n"
      "  Sigmoid             0.039\n"
      "  MatMul              0.015  <-- lowest impact\n"
      "  (4 target(s) with score 0.0 hidden; pass --show_zero_scores or read the JSON)\n";
  EXPECT_EQ(RenderRanking(ReferenceExample(), false), expected);
}

TEST(RankingTextTest, ShowZeroScoresListsThemInNameOrder) {
  SensitivityResult r;
  r.metric = "mse";
  r.granularity = "node";
  r.target_precision = "fp8";
  r.scores = {{"/b", 0.0}, {"/a", 0.0}, {"/conv", 12.5}, {"/tiny", 0.0001}};
  const std::string expected =
      "Sensitivity scan (fp8 / mse / node):\n"
      "  /conv  12.500     <-- highest impact\n"
      "  /tiny   1.00e-04\n"
      "  /a      0\n"
      "  /b      0         <-- lowest impact\n";
  EXPECT_EQ(RenderRanking(r, true), expected);
}

// CoAtNet-0 with a random head: every score tiny. They keep their order and size on screen, and a
// line says that all of them are below the floor (it used to print "~0" on every row).
TEST(RankingTextTest, SmallScoresPrintSignificantDigitsAndTheFloorIsSaid) {
  SensitivityResult r;
  r.metric = "kl_div";
  r.granularity = "op_type";
  r.target_precision = "int8";
  r.scores = {{"Add", 3.2e-7}, {"Conv", 4.56e-9}, {"MatMul", 1.0e-14}};
  const std::string expected =
      "Sensitivity scan (int8 / kl_div / op_type):\n"
      "  Add     3.20e-07  <-- highest impact\n"
      "  Conv    4.56e-09\n"
      "  MatMul  1.00e-14  <-- lowest impact\n"
      "  (every score is below 1e-06: quantizing any one target changes the outputs by about float rounding, so the "
      "order is weak; a near-constant output, such as an untrained head, does this)\n";
  EXPECT_EQ(RenderRanking(r, false), expected);
  r.scores["Add"] = 2e-6;  // one score above the floor: no such line
  EXPECT_EQ(RenderRanking(r, false).find("every score is below"), std::string::npos);
}

TEST(RankingTextTest, TiesAreListedByName) {
  SensitivityResult r;
  r.metric = "kl_div";
  r.granularity = "op_type";
  r.target_precision = "int8";
  r.scores = {{"Mul", 0.5}, {"Add", 0.5}, {"Conv", 0.5}};
  const std::string expected =
      "Sensitivity scan (int8 / kl_div / op_type):\n"
      "  Add   0.500  <-- highest impact\n"
      "  Conv  0.500\n"
      "  Mul   0.500  <-- lowest impact\n";
  EXPECT_EQ(RenderRanking(r, false), expected);
}

TEST(RankingTextTest, FailedTargetsAndEmptyScans) {
  SensitivityResult r;
  r.metric = "kl_div";
  r.granularity = "op_type";
  r.target_precision = "int8";
  EXPECT_EQ(RenderRanking(r, false),
            "Sensitivity scan (int8 / kl_div / op_type):\n  (no targets were scored)\n");
  r.scores = {{"Relu", 0.0}};
  r.failed = {{"Cast", "no Q/DQ inserted"}};
  EXPECT_EQ(RenderRanking(r, false),
            "Sensitivity scan (int8 / kl_div / op_type):\n"
            "  (1 target(s) with score 0.0 hidden; pass --show_zero_scores or read the JSON)\n"
            "  (1 target(s) failed and are not ranked; see \"failed\" in the JSON)\n");
}

TEST(RankingTextTest, SingleTargetIsMarkedHighest) {
  SensitivityResult r;
  r.metric = "cos";
  r.granularity = "node";
  r.target_precision = "int8";
  r.scores = {{"/only", 0.25}};
  EXPECT_EQ(RenderRanking(r, false),
            "Sensitivity scan (int8 / cos / node):\n  /only  0.250  <-- highest impact\n");
}

}  // namespace
}  // namespace ptqkit::sensitivity
