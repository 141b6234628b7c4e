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
#include "ptqkit/error.h"

namespace ptqkit::calib {
namespace {

constexpr const char* kFormat = "ptqkit.calibration_table";
constexpr int kVersion = 1;

[[noreturn]] void IoError(const std::string& what, const std::string& path) {
  throw Error(fmt::format("{} '{}': {}", what, path, std::strerror(errno)), Error::Kind::kIo);
}

}  // namespace

void CalibrationTable::Save(const std::string& path) const {
  nlohmann::json entries = nlohmann::json::object();
  for (const auto& [name, stats] : tensors) entries[name] = stats.ToJson();
  const nlohmann::json json = {
      {"format", kFormat}, {"version", kVersion}, {"CalibrationTable", std::move(entries)}};
  const std::string text = json.dump(1) + "\n";

  AtomicFileWriter writer;
  writer.Stage(path, text);
  writer.Commit();
}

CalibrationTable CalibrationTable::Load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) IoError("cannot read calibration table", path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(buffer.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(fmt::format("calibration table '{}' is not valid JSON: {}", path, e.what()));
  }
  if (!json.is_object() || !json.contains("format") || json.at("format") != kFormat) {
    throw Error(fmt::format("'{}' is not a ptqkit calibration table (expected \"format\": \"{}\")",
                            path, kFormat));
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
  return table;
}

}  // namespace ptqkit::calib
