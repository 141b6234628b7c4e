// Method: how an activation tensor's quantization range (amax) is chosen from its statistics.
// kMax takes the absolute maximum, kMse the amax with the least expected squared quantization
// error over the histogram (mse_search.h), kEntropy runs a TensorRT-style KL-divergence search over the
// |x| histogram, kPercentile takes a high percentile of |x|. See scale_search.h.
// The calibration-method table (`MethodRows`) lists every --calibration_method with what it
// chooses: an activation's range (int8/fp8: max, entropy, percentile, mse) or a weight-only format's
// weights (rtn, awq_clip, awq_lite, computed in quant/formats/blocked_weight_search.h). The option table's
// choices, the help text and Quantize() read it.
// Plain values; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ptqkit::calib {

enum class Method { kMax, kEntropy, kPercentile, kMse };

// What a method chooses.
enum class MethodTarget { kActivationRanges, kWeights };

struct MethodRow {
  std::string_view name;
  MethodTarget target;
};

// Every method, in help order (activation methods first).
const std::vector<MethodRow>& MethodRows();
// The names of one target's methods, in table order.
std::vector<std::string> MethodNames(MethodTarget target);
// Every name the option parser takes: the table's and ModelOpt's "rtn_dq" (read as "rtn").
std::vector<std::string> AcceptedMethodSpellings();
// `name` with ModelOpt's alias resolved ("rtn_dq" -> "rtn").
std::string CanonicalMethodName(std::string_view name);
// The row of `name` (after CanonicalMethodName), or nullptr.
const MethodRow* FindMethodRow(std::string_view name);
// The activation-range method when none is given. mse, not ModelOpt's entropy: it is never far from
// max and often better on real models, where entropy can lose a lot.
inline constexpr std::string_view kDefaultActivationMethod = "mse";

// The grid an amax is chosen for, in units where amax maps to `qmax`: uniform integer steps
// (round half to even, saturating at qmax), or, when `nearest` is set, a format's own non-uniform
// values (`nearest(y)`: the grid value nearest to y >= 0, saturating at qmax). The formats table
// (quant/formats/formats.h) gives each format's; the default is symmetric INT8's 127 steps. Only kMse
// looks at it.
struct Grid {
  double qmax = 127.0;
  double (*nearest)(double y) = nullptr;
};

// Parses the --calibration_method spelling: "max", "entropy", "percentile" or "mse" (exact, lower case).
// Throws ptqkit::Error naming the value and the accepted spellings otherwise.
Method ParseMethod(std::string_view name);

// Checks a --percentile value up front (quantize and the sensitivity scan take it alike): throws
// ptqkit::Error "--percentile must be in (0, 100], got X" otherwise.
void CheckPercentile(double percentile);

// The spelling ParseMethod accepts, e.g. "entropy".
std::string MethodName(Method method);

}  // namespace ptqkit::calib
