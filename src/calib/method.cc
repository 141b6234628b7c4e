#include "calib/method.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ptqkit/error.h"

namespace ptqkit::calib {

const std::vector<MethodRow>& MethodRows() {
  static const std::vector<MethodRow> kRows = {
      {"max", MethodTarget::kActivationRanges},  {"entropy", MethodTarget::kActivationRanges},
      {"percentile", MethodTarget::kActivationRanges}, {"mse", MethodTarget::kActivationRanges},
      {"rtn", MethodTarget::kWeights},           {"awq_clip", MethodTarget::kWeights},
      {"awq_lite", MethodTarget::kWeights},
  };
  return kRows;
}

std::vector<std::string> MethodNames(MethodTarget target) {
  std::vector<std::string> names;
  for (const MethodRow& row : MethodRows()) {
    if (row.target == target) names.emplace_back(row.name);
  }
  return names;
}

std::vector<std::string> AcceptedMethodSpellings() {
  std::vector<std::string> names;
  for (const MethodRow& row : MethodRows()) {
    names.emplace_back(row.name);
    if (row.name == "rtn") names.emplace_back("rtn_dq");
  }
  return names;
}

std::string CanonicalMethodName(std::string_view name) {
  // ModelOpt spells round-to-nearest "rtn_dq" (its output has DequantizeLinear only, as ours).
  return name == "rtn_dq" ? std::string("rtn") : std::string(name);
}

const MethodRow* FindMethodRow(std::string_view name) {
  const std::string canonical = CanonicalMethodName(name);
  for (const MethodRow& row : MethodRows()) {
    if (row.name == canonical) return &row;
  }
  return nullptr;
}

Method ParseMethod(std::string_view name) {
  if (name == "max") return Method::kMax;
  if (name == "entropy") return Method::kEntropy;
  if (name == "percentile") return Method::kPercentile;
  if (name == "mse") return Method::kMse;
  throw Error(fmt::format("unknown --calibration_method '{}' (expected one of: {})", name,
                          fmt::join(MethodNames(MethodTarget::kActivationRanges), ", ")));
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
