#include "scan/sensitivity_part.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "base/atomic_file.h"
#include "base/json_file.h"
#include "ptqkit/error.h"

namespace ptqkit::shard {
namespace {

constexpr const char* kFormat = "ptqkit.sensitivity_part";
constexpr int kVersion = 1;

using Entries = std::vector<std::pair<std::string, std::string>>;

// Puts (target, reason) entries in scan order, given each target's position.
Entries InScanOrder(Entries entries, const std::map<std::string, int64_t>& position) {
  std::stable_sort(entries.begin(), entries.end(),
                   [&](const auto& a, const auto& b) { return position.at(a.first) < position.at(b.first); });
  return entries;
}

}  // namespace

void SaveSensitivityPart(const SensitivityPart& part, const std::string& path) {
  const nlohmann::json json = {{"format", kFormat},
                               {"version", kVersion},
                               {"shard", ShardName(part.shard)},
                               {"num_targets", part.num_targets},
                               {"targets", part.targets},
                               {"fingerprint", FingerprintToJson(part.fingerprint)},
                               {"result", sensitivity::ToJson(part.result)}};
  WriteFileAtomically(path, json.dump(1) + "\n");
}

SensitivityPart LoadSensitivityPart(const std::string& path) {
  const nlohmann::json json = ReadJsonFile(path, "sensitivity part");
  if (!json.is_object() || !json.contains("format") || json.at("format") != kFormat) {
    const bool whole = json.is_object() && json.contains("scores");
    throw Error(fmt::format("'{}' is not a sensitivity part (expected \"format\": \"{}\"){}", path, kFormat,
                            whole ? "; it is a whole scores file, which needs no merging" : ""));
  }
  if (!json.contains("version") || json.at("version") != kVersion) {
    throw Error(fmt::format("sensitivity part '{}' has version {}, this ptqkit reads version {}", path,
                            json.contains("version") ? json.at("version").dump() : "none", kVersion));
  }
  for (const char* key : {"shard", "num_targets", "targets", "fingerprint", "result"}) {
    if (!json.contains(key)) throw Error(fmt::format("sensitivity part '{}' has no \"{}\"", path, key));
  }
  const auto& targets = json.at("targets");
  if (!json.at("shard").is_string() || !json.at("num_targets").is_number_integer() || !targets.is_array() ||
      !std::all_of(targets.begin(), targets.end(), [](const auto& t) { return t.is_string(); })) {
    throw Error(fmt::format("sensitivity part '{}': \"shard\" must be \"K/N\", \"num_targets\" an integer and "
                            "\"targets\" a list of names",
                            path));
  }
  SensitivityPart part;
  part.shard = ParseShard(json.at("shard").get<std::string>());
  part.num_targets = json.at("num_targets").get<int64_t>();
  part.targets = targets.get<std::vector<std::string>>();
  part.fingerprint = FingerprintFromJson(json.at("fingerprint"), path);
  part.result = sensitivity::FromJson(json.at("result"), path);
  return part;
}

SensitivityResult MergeSensitivityParts(const std::vector<SensitivityPart>& parts, const std::vector<std::string>& names) {
  std::vector<ShardSpec> shards;
  for (const auto& p : parts) shards.push_back(p.shard);
  RequireCompleteSet(shards, names);
  for (size_t i = 1; i < parts.size(); ++i) {
    RequireSameFingerprint(parts[0].fingerprint, names[0], parts[i].fingerprint, names[i]);
  }
  std::vector<const SensitivityPart*> by_shard(parts.size());
  std::vector<std::string> name_of(parts.size());
  for (size_t i = 0; i < parts.size(); ++i) {
    by_shard[parts[i].shard.index] = &parts[i];
    name_of[parts[i].shard.index] = names[i];
  }
  const int64_t n = static_cast<int64_t>(parts.size());
  const int64_t total = by_shard[0]->num_targets;
  // Scan order: target i is entry i / N of shard i % N.
  std::map<std::string, int64_t> position;
  for (int64_t k = 0; k < n; ++k) {
    const SensitivityPart& p = *by_shard[k];
    const int64_t expected = total > k ? (total - k + n - 1) / n : 0;
    if (p.num_targets != total || static_cast<int64_t>(p.targets.size()) != expected) {
      throw Error(fmt::format("part '{}' lists {} of {} target(s) where shard {}/{} of {} target(s) has {}", name_of[k],
                              p.targets.size(), p.num_targets, k, n, total, expected));
    }
    for (size_t j = 0; j < p.targets.size(); ++j) position[p.targets[j]] = static_cast<int64_t>(j) * n + k;
  }

  const SensitivityResult& first = by_shard[0]->result;
  SensitivityResult merged;
  merged.onnx_path = first.onnx_path;
  merged.calibration_source = first.calibration_source;
  merged.num_calibration_samples = first.num_calibration_samples;
  merged.metric = first.metric;
  merged.granularity = first.granularity;
  merged.target_precision = first.target_precision;
  merged.ptqkit_version = first.ptqkit_version;
  for (int64_t k = 0; k < n; ++k) {
    const SensitivityResult& r = by_shard[k]->result;
    for (const auto& [target, score] : r.scores) merged.scores[target] = score;
    // Each shard settles its own targets against its own neighbours (it does not see the others').
    for (const auto& [target, s] : r.sampling) merged.sampling[target] = s;
    merged.failed.insert(merged.failed.end(), r.failed.begin(), r.failed.end());
    merged.non_finite.insert(merged.non_finite.end(), r.non_finite.begin(), r.non_finite.end());
    for (const auto& [phase, seconds] : r.timings) {
      merged.timings[phase] = std::max(merged.timings[phase], seconds);
      if (phase == "probes_s") merged.timings["probes_s_all_shards"] += seconds;
    }
    for (const auto& [target, reason] : r.failed) {
      if (!position.count(target)) {
        throw Error(fmt::format("part '{}' reports target '{}' that it does not list", name_of[k], target));
      }
    }
  }
  for (const auto& [target, score] : merged.scores) {
    if (!position.count(target)) throw Error(fmt::format("a part scores target '{}' that no part lists", target));
  }
  merged.failed = InScanOrder(std::move(merged.failed), position);
  merged.non_finite = InScanOrder(std::move(merged.non_finite), position);
  if (merged.scores.empty()) {
    throw Error(fmt::format("sensitivity scan of '{}' scored nothing: all {} probes failed{}", merged.onnx_path,
                            merged.failed.size(),
                            merged.failed.empty() ? "" : fmt::format("; the first, '{}': {}", merged.failed.front().first,
                                                                     merged.failed.front().second)));
  }
  return merged;
}

}  // namespace ptqkit::shard
