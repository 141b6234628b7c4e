// Method: how an activation tensor's quantization range (amax) is chosen from its statistics.
// kMax takes the absolute maximum, kMse the amax with the least expected squared quantization
// error over the histogram (mse_search.h), kEntropy runs a TensorRT-style KL-divergence search over the
// |x| histogram, kPercentile takes a high percentile of |x|. See scale_search.h.
// Plain values; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace ptqkit::calib {

enum class Method { kMax, kEntropy, kPercentile, kMse };

// The grid the amax is chosen for: symmetric int8 (127 uniform steps) or FP8 E4M3 (amax maps
// to 448, non-uniform). Only kMse looks at it.
enum class Grid { kInt8, kFp8E4M3 };

// Parses the --calibration_method spelling: "max", "entropy", "percentile" or "mse" (exact, lower case).
// Throws ptqkit::Error naming the value and the accepted spellings otherwise.
Method ParseMethod(std::string_view name);

// The spelling ParseMethod accepts, e.g. "entropy".
std::string MethodName(Method method);

}  // namespace ptqkit::calib
