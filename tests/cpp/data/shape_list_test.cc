#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ptqkit/calibration.h"
#include "test_files.h"

namespace ptqkit {
namespace {

using data::testing::ErrorOf;
using ::testing::HasSubstr;
using Shapes = std::map<std::string, std::vector<int64_t>>;

TEST(ParseShapeListTest, CommasSpacesAndColonsInNames) {
  EXPECT_EQ(ParseShapeList("in:8x3x224x224,mask:8x128"),
            (Shapes{{"in", {8, 3, 224, 224}}, {"mask", {8, 128}}}));
  EXPECT_EQ(ParseShapeList(" in:1  input_1:0:4x2 ,, x:7 "),
            (Shapes{{"in", {1}}, {"input_1:0", {4, 2}}, {"x", {7}}}));
  EXPECT_TRUE(ParseShapeList("").empty());
  EXPECT_TRUE(ParseShapeList(" , ").empty());
}

TEST(ParseShapeListTest, ErrorsQuoteTheEntry) {
  EXPECT_THAT(ErrorOf([] { ParseShapeList("in"); }), HasSubstr("bad entry 'in': no ':'"));
  EXPECT_THAT(ErrorOf([] { ParseShapeList(":1x2"); }), HasSubstr("empty input name"));
  EXPECT_THAT(ErrorOf([] { ParseShapeList("in:1x?x3"); }),
              HasSubstr("bad entry 'in:1x?x3': '?' is not a number"));
  EXPECT_THAT(ErrorOf([] { ParseShapeList("in:1xx3"); }), HasSubstr("'' is not a number"));
  EXPECT_THAT(ErrorOf([] { ParseShapeList("in:"); }), HasSubstr("bad entry 'in:'"));
  EXPECT_THAT(ErrorOf([] { ParseShapeList("in:1x0"); }), HasSubstr("at least 1"));
  EXPECT_THAT(ErrorOf([] { ParseShapeList("in:1x-3"); }), HasSubstr("bad entry 'in:1x-3'"));
  EXPECT_THAT(ErrorOf([] { ParseShapeList("a:1,a:2"); }), HasSubstr("input 'a' is given twice"));
}

}  // namespace
}  // namespace ptqkit
