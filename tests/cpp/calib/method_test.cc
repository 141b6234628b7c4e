#include "calib/method.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ptqkit/error.h"

namespace ptqkit::calib {
namespace {

TEST(MethodTest, ParsesAndNamesEveryMethod) {
  for (Method m : {Method::kMax, Method::kEntropy, Method::kPercentile, Method::kMse}) {
    EXPECT_EQ(ParseMethod(MethodName(m)), m);
  }
  EXPECT_EQ(ParseMethod("entropy"), Method::kEntropy);
  EXPECT_EQ(ParseMethod("mse"), Method::kMse);
}

TEST(MethodTest, UnknownMethodNamesValueAndChoices) {
  try {
    ParseMethod("mse2");
    FAIL() << "expected ptqkit::Error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "unknown --calibration_method 'mse2' (expected one of: max, entropy, percentile, mse)");
    EXPECT_EQ(e.kind(), Error::Kind::kInvalidInput);
  }
  EXPECT_THROW(ParseMethod("MAX"), Error);
  EXPECT_THROW(ParseMethod(""), Error);
}

}  // namespace
}  // namespace ptqkit::calib
