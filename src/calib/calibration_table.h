// CalibrationTable: the statistics of every calibrated activation tensor, keyed by tensor name;
// what --calibration_cache saves and reloads, so a later run can choose scales (with any
// method) without running calibration again.
//
// File format (JSON):
//   {"format": "ptqkit.calibration_table", "version": 2,
//    "CalibrationTable": {"<tensor>": <TensorStatistics::ToJson()>, ...},
//    "source": {...}}   (optional; see `source` below)
// Each entry holds the tensor's amax, counts and its sparse histogram, exactly: a reloaded table
// gives bit-identical amax for every method.
// A value type; not thread-safe.
#pragma once

#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "calib/tensor_statistics.h"

namespace ptqkit::calib {

struct CalibrationTable {
  // Tensor name -> statistics (whose name() equals the key).
  std::map<std::string, TensorStatistics> tensors;
  // What the statistics were computed from (`ptqkit calibrate` fills it: ptqkit version, model and
  // data digests, ...; see scan/fingerprint.h), so a reader can refuse a table of another model.
  // Empty for tables written by `quantize --save_calibration_cache`; then no "source" key is written.
  std::map<std::string, std::string> source;

  // Writes to a temporary file in the same folder, then renames it over `path`, so `path` is
  // either the old file or the complete new one. Throws ptqkit::Error (kIo) naming the file.
  void Save(const std::string& path) const;

  // Throws ptqkit::Error naming the file and what is wrong: missing or unreadable (kIo), not
  // JSON, wrong format or version, or an inconsistent entry (kInvalidInput).
  static CalibrationTable Load(const std::string& path);

  // The file's JSON object, and back; `source` names the file in error messages. Save() writes
  // ToJson().dump(1) plus a newline, so equal tables give equal bytes.
  nlohmann::json ToJson() const;
  static CalibrationTable FromJson(const nlohmann::json& json, const std::string& source);

  bool operator==(const CalibrationTable& other) const = default;
};

}  // namespace ptqkit::calib
