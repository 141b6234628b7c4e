#include "calib/method.h"

#include <fmt/format.h>

#include "ptqkit/error.h"

namespace ptqkit::calib {

Method ParseMethod(std::string_view name) {
  if (name == "max") return Method::kMax;
  if (name == "entropy") return Method::kEntropy;
  if (name == "percentile") return Method::kPercentile;
  if (name == "mse") return Method::kMse;
  throw Error(fmt::format(
      "unknown --calibration_method '{}' (expected one of: max, entropy, percentile, mse)", name));
}

void CheckPercentile(double percentile) {
  if (!(percentile > 0.0 && percentile <= 100.0)) {
    throw Error(fmt::format("--percentile must be in (0, 100], got {}", percentile));
  }
}

std::string MethodName(Method method) {
  switch (method) {
    case Method::kMax:
      return "max";
    case Method::kEntropy:
      return "entropy";
    case Method::kPercentile:
      return "percentile";
    case Method::kMse:
      return "mse";
  }
  return "unknown";
}

}  // namespace ptqkit::calib
