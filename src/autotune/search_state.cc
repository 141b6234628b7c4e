#include "autotune/search_state.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/atomic_file.h"
#include "base/digest.h"
#include "base/json_file.h"
#include "base/log.h"
#include "ptqkit/error.h"

namespace ptqkit::autotune {
namespace {

constexpr const char* kStateFormat = "ptqkit-autotune-state";
constexpr const char* kPatternFormat = "ptqkit-autotune-patterns";

nlohmann::json ToJson(const LatencySummary& s) {
  return {{"median_ms", s.median_ms}, {"p10_ms", s.p10_ms}, {"p90_ms", s.p90_ms}, {"mad_ms", s.mad_ms},
          {"runs", s.runs}};
}

LatencySummary FromJson(const nlohmann::json& j) {
  LatencySummary s;
  s.median_ms = j.at("median_ms").get<double>();
  s.p10_ms = j.at("p10_ms").get<double>();
  s.p90_ms = j.at("p90_ms").get<double>();
  s.mad_ms = j.at("mad_ms").get<double>();
  s.runs = j.at("runs").get<int>();
  return s;
}

}  // namespace

SearchState::SearchState(std::string path, std::string fingerprint)
    : path_(std::move(path)), fingerprint_(std::move(fingerprint)) {
  std::error_code ec;
  if (path_.empty() || !std::filesystem::exists(path_, ec)) return;
  const nlohmann::json j = ReadJsonFile(path_, "--autotune_state_file");
  try {
    if (!j.is_object() || j.value("format", "") != kStateFormat) {
      throw Error(fmt::format("--autotune_state_file '{}' is not a ptqkit autotune state file (no \"format\": \"{}\")",
                              path_, kStateFormat));
    }
    if (j.value("fingerprint", "") != fingerprint_) {
      log::Warn("autotune: state file '{}' belongs to another model or other settings; starting afresh (it will be "
                "overwritten)",
                path_);
      return;
    }
    if (j.contains("node_ms")) node_ms_ = j.at("node_ms").get<std::map<std::string, double>>();
    for (const auto& [key, value] : j.at("candidates").items()) {
      CandidateRecord r;
      if (value.contains("latency")) r.latency = FromJson(value.at("latency"));
      if (value.contains("divergence")) r.divergence = value.at("divergence").get<double>();
      candidates_[key] = r;
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("--autotune_state_file '{}' is malformed: {}", path_, JsonLibraryMessage(e)));
  }
  loaded_ = static_cast<int>(candidates_.size());
  log::Info("autotune: resuming from '{}' ({} candidate(s) already measured)", path_, loaded_);
}

std::string SearchState::Key(std::vector<std::string> in_float) {
  if (in_float.empty()) return "default";
  std::sort(in_float.begin(), in_float.end());
  in_float.erase(std::unique(in_float.begin(), in_float.end()), in_float.end());
  Digest d;
  for (const auto& n : in_float) {
    d.Update(n);
    d.Update("\n");
  }
  return fmt::format("float:{}:{}", in_float.size(), d.Hex());
}

const CandidateRecord* SearchState::Find(const std::string& key) const {
  auto it = candidates_.find(key);
  return it == candidates_.end() ? nullptr : &it->second;
}

void SearchState::PutLatency(const std::string& key, const LatencySummary& latency) {
  candidates_[key].latency = latency;
  Save();
}

void SearchState::PutDivergence(const std::string& key, double divergence) {
  candidates_[key].divergence = divergence;
  Save();
}

void SearchState::PutNodeMs(std::map<std::string, double> node_ms) {
  node_ms_ = std::move(node_ms);
  Save();
}

void SearchState::Save() const {
  if (path_.empty()) return;
  nlohmann::json candidates = nlohmann::json::object();
  for (const auto& [key, r] : candidates_) {
    nlohmann::json c = nlohmann::json::object();
    if (r.latency) c["latency"] = ToJson(*r.latency);
    // JSON has no infinity: a non-finite divergence (NaN/Inf outputs) is stored as a huge number.
    if (r.divergence) c["divergence"] = std::isfinite(*r.divergence) ? *r.divergence : 1e300;
    candidates[key] = c;
  }
  const nlohmann::json j = {{"format", kStateFormat}, {"version", 1}, {"fingerprint", fingerprint_},
                            {"node_ms", node_ms_}, {"candidates", candidates}};
  WriteFileAtomically(path_, j.dump(1) + "\n");
}

std::map<std::string, std::string> LoadPatternCache(const std::string& path) {
  std::map<std::string, std::string> decisions;
  std::error_code ec;
  if (path.empty() || !std::filesystem::exists(path, ec)) return decisions;
  const nlohmann::json j = ReadJsonFile(path, "--autotune_pattern_cache");
  if (!j.is_object() || j.value("format", "") != kPatternFormat || !j.contains("patterns") ||
      !j.at("patterns").is_object()) {
    throw Error(fmt::format("--autotune_pattern_cache '{}' is not a ptqkit pattern cache (JSON with \"format\": \"{}\"; "
                            "ModelOpt's YAML caches describe its own regions and cannot be read)",
                            path, kPatternFormat));
  }
  for (const auto& [sig, scheme] : j.at("patterns").items()) {
    if (!scheme.is_string()) throw Error(fmt::format("--autotune_pattern_cache '{}': pattern value is not a string", path));
    decisions[sig] = scheme.get<std::string>();
  }
  return decisions;
}

void SavePatternCache(const std::string& path, const std::map<std::string, std::string>& decisions) {
  nlohmann::json patterns = nlohmann::json::object();
  for (const auto& [sig, scheme] : decisions) patterns[sig] = scheme;
  WriteFileAtomically(path, nlohmann::json({{"format", kPatternFormat}, {"version", 1}, {"patterns", patterns}}).dump(1) + "\n");
}

}  // namespace ptqkit::autotune
