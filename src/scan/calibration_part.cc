#include "scan/calibration_part.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "base/atomic_file.h"
#include "base/json_file.h"
#include "ptqkit/error.h"

namespace ptqkit::shard {
namespace {

constexpr const char* kFormat = "ptqkit.calibration_part";
constexpr int kVersion = 1;

}  // namespace

void SaveCalibrationPart(const CalibrationPart& part, const std::string& path) {
  const nlohmann::json json = {{"format", kFormat},
                               {"version", kVersion},
                               {"shard", ShardName(part.shard)},
                               {"num_samples", part.num_samples},
                               {"fingerprint", FingerprintToJson(part.fingerprint)},
                               {"table", part.table.ToJson()}};
  WriteFileAtomically(path, json.dump(1) + "\n");
}

CalibrationPart LoadCalibrationPart(const std::string& path) {
  const nlohmann::json json = ReadJsonFile(path, "calibration part");
  if (!json.is_object() || !json.contains("format") || json.at("format") != kFormat) {
    const bool table = json.is_object() && json.contains("CalibrationTable");
    throw Error(fmt::format("'{}' is not a calibration part (expected \"format\": \"{}\"){}", path, kFormat,
                            table ? "; it is a whole calibration table, which needs no merging" : ""));
  }
  if (!json.contains("version") || json.at("version") != kVersion) {
    throw Error(fmt::format("calibration part '{}' has version {}, this ptqkit reads version {}", path,
                            json.contains("version") ? json.at("version").dump() : "none", kVersion));
  }
  for (const char* key : {"shard", "num_samples", "fingerprint", "table"}) {
    if (!json.contains(key)) throw Error(fmt::format("calibration part '{}' has no \"{}\"", path, key));
  }
  if (!json.at("shard").is_string() || !json.at("num_samples").is_number_integer()) {
    throw Error(fmt::format("calibration part '{}': \"shard\" must be \"K/N\" and \"num_samples\" an integer", path));
  }
  CalibrationPart part;
  part.shard = ParseShard(json.at("shard").get<std::string>());
  part.num_samples = json.at("num_samples").get<int64_t>();
  part.fingerprint = FingerprintFromJson(json.at("fingerprint"), path);
  part.table = calib::CalibrationTable::FromJson(json.at("table"), path);
  return part;
}

calib::CalibrationTable MergeCalibrationParts(const std::vector<CalibrationPart>& parts,
                                              const std::vector<std::string>& names) {
  std::vector<ShardSpec> shards;
  for (const auto& p : parts) shards.push_back(p.shard);
  RequireCompleteSet(shards, names);
  for (size_t i = 1; i < parts.size(); ++i) {
    RequireSameFingerprint(parts[0].fingerprint, names[0], parts[i].fingerprint, names[i]);
  }
  calib::CalibrationTable merged = parts[0].table;
  for (size_t i = 1; i < parts.size(); ++i) {
    const auto& tensors = parts[i].table.tensors;
    if (tensors.size() != merged.tensors.size()) {
      throw Error(fmt::format("parts '{}' and '{}' hold {} and {} tensors; parts of one run hold the same ones",
                              names[0], names[i], merged.tensors.size(), tensors.size()));
    }
    for (const auto& [name, stats] : tensors) {
      auto it = merged.tensors.find(name);
      if (it == merged.tensors.end()) {
        throw Error(fmt::format("part '{}' has tensor '{}' that part '{}' lacks; parts of one run hold the same tensors",
                                names[i], name, names[0]));
      }
      it->second.Merge(stats);
    }
  }
  merged.source = parts[0].fingerprint;
  return merged;
}

}  // namespace ptqkit::shard
