// TensorRT's text calibration cache: a first line "TRT-<version>-<calibrator>" (for example
// "TRT-8601-EntropyCalibration2"), then one line per tensor, "<tensor name>: <hex>", where <hex>
// is the 8 hex digits of the big-endian IEEE float32 scale (amax / 127 for INT8). ModelOpt's
// --calibration_cache_path reads this form; ptqkit reads and writes it.
#pragma once

#include <map>
#include <string>

namespace ptqkit::calib {

// tensor -> scale. Throws ptqkit::Error naming the file and line for anything else than the form
// above (the file is read as untrusted input: size-capped, no scale that is not finite and > 0).
std::map<std::string, float> ReadTrtCalibrationCache(const std::string& path);

// The text of a cache holding `scales` (tensor -> scale), names in sorted order.
std::string TrtCalibrationCacheText(const std::map<std::string, float>& scales);

}  // namespace ptqkit::calib
