// Fingerprint: what a shard's result depends on besides its slice — ptqkit's version, digests of
// the model, the data and the calibration table, and every option that changes the numbers — as
// readable key/value pairs. Parts merge only when their fingerprints are equal, and a refusal
// names the first key that differs with both values, so the user sees *why* (another model,
// other data, another --metric, another ptqkit).
// Plain values; thread-safe.
#pragma once

#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>

namespace ptqkit::shard {

using Fingerprint = std::map<std::string, std::string>;

nlohmann::json FingerprintToJson(const Fingerprint& fingerprint);
// Throws ptqkit::Error naming `source` when `json` is not an object of strings.
Fingerprint FingerprintFromJson(const nlohmann::json& json, const std::string& source);

// Throws ptqkit::Error naming both parts and the first differing key (with both values) when
// `other` (from part `other_name`) differs from `first` (from part `first_name`).
void RequireSameFingerprint(const Fingerprint& first, const std::string& first_name, const Fingerprint& other,
                            const std::string& other_name);

}  // namespace ptqkit::shard
