#include "calib/trt_calibration_cache.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "base/input_file.h"
#include "ptqkit/error.h"

namespace ptqkit::calib {
namespace {

// The header TensorRT 8.6's entropy calibrator writes; TensorRT reads the scales whatever the
// version number says when a calibrator hands it the cache.
constexpr const char* kHeader = "TRT-8601-EntropyCalibration2";

float ScaleFromHex(const std::string& hex, const std::string& where) {
  if (hex.size() != 8 || hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) {
    throw Error(fmt::format("{}: expected 8 hex digits (a big-endian float32 scale), got '{}'", where, hex));
  }
  const uint32_t bits = static_cast<uint32_t>(std::stoul(hex, nullptr, 16));
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  if (!std::isfinite(scale) || scale <= 0.0f) {
    throw Error(fmt::format("{}: the scale {} is not a positive finite number", where, scale));
  }
  return scale;
}

}  // namespace

std::map<std::string, float> ReadTrtCalibrationCache(const std::string& path) {
  const std::string text = ReadWholeInputFile(path, "--calibration_cache_path", int64_t{256} << 20);
  std::map<std::string, float> scales;
  size_t start = 0;
  int line_number = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    start = end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string where = fmt::format("{} line {}", path, line_number);
    if (line_number == 1) {
      if (line.rfind("TRT-", 0) != 0) {
        throw Error(fmt::format("{}: not a TensorRT calibration cache (the first line should be like '{}')", where,
                                kHeader));
      }
      continue;
    }
    if (line.empty()) continue;
    // Tensor names may hold ": " themselves; the scale follows the last one.
    const size_t colon = line.rfind(": ");
    if (colon == std::string::npos || colon == 0) {
      throw Error(fmt::format("{}: expected '<tensor name>: <hex scale>'", where));
    }
    scales[line.substr(0, colon)] = ScaleFromHex(line.substr(colon + 2), where);
  }
  if (line_number == 0) throw Error(fmt::format("{}: the file is empty, not a TensorRT calibration cache", path));
  return scales;
}

std::string TrtCalibrationCacheText(const std::map<std::string, float>& scales) {
  std::string text = std::string(kHeader) + "\n";
  for (const auto& [name, scale] : scales) {
    uint32_t bits;
    std::memcpy(&bits, &scale, sizeof bits);
    text += fmt::format("{}: {:08x}\n", name, bits);
  }
  return text;
}

}  // namespace ptqkit::calib
