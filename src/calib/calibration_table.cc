#include "calib/calibration_table.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/atomic_file.h"
#include "base/json_file.h"
#include "ptqkit/error.h"

namespace ptqkit::calib {
namespace {

constexpr const char* kFormat = "ptqkit.calibration_table";
// Version 2 added each entry's "zero_count" (exact zeros, which the searches leave out).
constexpr int kVersion = 2;

}  // namespace

nlohmann::json CalibrationTable::ToJson() const {
  nlohmann::json entries = nlohmann::json::object();
  for (const auto& [name, stats] : tensors) entries[name] = stats.ToJson();
  nlohmann::json json = {{"format", kFormat}, {"version", kVersion}, {"CalibrationTable", std::move(entries)}};
  if (!source.empty()) json["source"] = source;
  return json;
}

void CalibrationTable::Save(const std::string& path) const {
  const std::string text = ToJson().dump(1) + "\n";
  WriteFileAtomically(path, text);
}

CalibrationTable CalibrationTable::Load(const std::string& path) {
  return FromJson(ReadJsonFile(path, "calibration table"), path);
}

CalibrationTable CalibrationTable::FromJson(const nlohmann::json& json, const std::string& path) {
  if (!json.is_object() || !json.contains("format") || json.at("format") != kFormat) {
    throw Error(fmt::format("'{}' is not a ptqkit calibration table (expected \"format\": \"{}\")",
                            path, kFormat));
  }
  if (json.contains("version") && json.at("version") == 1) {
    throw Error(fmt::format(
        "calibration table '{}' has version 1, written by an older ptqkit whose statistics lack "
        "the exact-zero counts this version needs; delete it and calibrate again to write a "
        "version {} table",
        path, kVersion));
  }
  if (!json.contains("version") || json.at("version") != kVersion) {
    throw Error(fmt::format("calibration table '{}' has version {}, expected {}", path,
                            json.contains("version") ? json.at("version").dump() : "none",
                            kVersion));
  }
  if (!json.contains("CalibrationTable") || !json.at("CalibrationTable").is_object()) {
    throw Error(fmt::format("calibration table '{}' has no \"CalibrationTable\" object", path));
  }
  CalibrationTable table;
  for (const auto& [name, entry] : json.at("CalibrationTable").items()) {
    try {
      table.tensors.emplace(name, TensorStatistics::FromJson(entry, name));
    } catch (const Error& e) {
      throw Error(fmt::format("calibration table '{}': {}", path, e.what()));
    }
  }
  if (json.contains("source")) {
    const nlohmann::json& source = json.at("source");
    if (!source.is_object()) throw Error(fmt::format("calibration table '{}': \"source\" must be an object", path));
    for (const auto& [key, value] : source.items()) {
      if (!value.is_string()) {
        throw Error(fmt::format("calibration table '{}': \"source\" entry \"{}\" must be a string", path, key));
      }
      table.source[key] = value.get<std::string>();
    }
  }
  return table;
}

}  // namespace ptqkit::calib
