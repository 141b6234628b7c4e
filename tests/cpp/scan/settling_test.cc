// When a target of the sensitivity scan stops sampling (scan/settling.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scan/settling.h"

namespace ptqkit {
namespace {

TargetEstimate Est(double mean, double half, int64_t samples = 64, bool active = true) {
  return {mean, mean - half, mean + half, samples, active};
}

TEST(SettlingTest, SeparatedFromBothNeighbours) {
  // 10 is clear of 5; 5 and 4.5 overlap each other; 1 is clear of 4.5 but ranked below it.
  const std::vector<TargetEstimate> t = {Est(10, 1), Est(5, 1), Est(4.5, 1), Est(1, 0.5)};
  const auto r = SettledTargets(t);
  EXPECT_EQ(r[0], "separated");
  EXPECT_NE(r[1], "separated");
  EXPECT_NE(r[2], "separated");
  EXPECT_EQ(r[3], "separated");
}

TEST(SettlingTest, NothingSettlesBeforeTheMinimumSamples) {
  const std::vector<TargetEstimate> t = {Est(10, 0.1, kMinSettleSamples - 1), Est(1, 0.1, kMinSettleSamples - 1)};
  for (const auto& reason : SettledTargets(t)) EXPECT_EQ(reason, "");
}

TEST(SettlingTest, PreciseWhenTheIntervalIsWithinFivePercent) {
  // Two overlapping targets: the one known to ±4 % is precise, the one known to ±20 % is not (it
  // is only decided: wholly below the picker's cut, which lies between 100 and 10).
  const std::vector<TargetEstimate> t = {Est(10, 0.4), Est(9.8, 2.0), Est(100, 1)};
  const auto r = SettledTargets(t);
  EXPECT_EQ(r[0], "precise");
  EXPECT_EQ(r[1], "decided");
}

TEST(SettlingTest, NegligibleUnderATenthOfAPercentOfTheMass) {
  // A tail of overlapping tiny targets next to 1000: each is under 0.1 % of the mass.
  const std::vector<TargetEstimate> t = {Est(1000, 10), Est(0.5, 0.4), Est(0.4, 0.4), Est(0.3, 0.4)};
  const auto r = SettledTargets(t);
  EXPECT_EQ(r[1], "negligible");
  EXPECT_EQ(r[2], "negligible");
}

TEST(SettlingTest, DecidedOnOneSideOfTheDefaultPickerCut) {
  // Means 40, 38, 12, 10: 90 % of the mass (90) is reached within the first three, so the cut lies
  // between 12 and 10 (at 11). 40 and 38 overlap each other but are wholly above it; 12 ± 3
  // straddles it, 10 ± 3 too.
  const std::vector<TargetEstimate> t = {Est(40, 5), Est(38, 5), Est(12, 3), Est(10, 3)};
  const auto r = SettledTargets(t);
  EXPECT_EQ(r[0], "decided");
  EXPECT_EQ(r[1], "decided");
  EXPECT_EQ(r[2], "");
  EXPECT_EQ(r[3], "");
}

TEST(SettlingTest, InactiveTargetsStayNeighboursButDoNotSettleAgain) {
  const std::vector<TargetEstimate> t = {Est(10, 1, 64, false), Est(9.5, 1)};
  const auto r = SettledTargets(t);
  EXPECT_EQ(r[0], "");
  EXPECT_NE(r[1], "separated");  // still overlaps the inactive 10
}

}  // namespace
}  // namespace ptqkit
