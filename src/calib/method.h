// Method: how an activation tensor's quantization range (amax) is chosen from its statistics.
// kMax takes the absolute maximum, kEntropy runs a TensorRT-style KL-divergence search over the
// |x| histogram, kPercentile takes a high percentile of |x|. See scale_search.h.
// Plain values; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace ptqkit::calib {

enum class Method { kMax, kEntropy, kPercentile };

// Parses the --calibration_method spelling: "max", "entropy" or "percentile" (exact, lower case).
// Throws ptqkit::Error naming the value and the accepted spellings otherwise.
Method ParseMethod(std::string_view name);

// The spelling ParseMethod accepts, e.g. "entropy".
std::string MethodName(Method method);

}  // namespace ptqkit::calib
