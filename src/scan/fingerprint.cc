#include "scan/fingerprint.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <set>

#include "ptqkit/error.h"

namespace ptqkit::shard {

nlohmann::json FingerprintToJson(const Fingerprint& fingerprint) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [key, value] : fingerprint) out[key] = value;
  return out;
}

Fingerprint FingerprintFromJson(const nlohmann::json& json, const std::string& source) {
  if (!json.is_object()) throw Error(fmt::format("'{}': \"fingerprint\" must be an object", source));
  Fingerprint out;
  for (const auto& [key, value] : json.items()) {
    if (!value.is_string()) throw Error(fmt::format("'{}': fingerprint entry \"{}\" must be a string", source, key));
    out[key] = value.get<std::string>();
  }
  return out;
}

void RequireSameFingerprint(const Fingerprint& first, const std::string& first_name, const Fingerprint& other,
                            const std::string& other_name) {
  std::set<std::string> keys;
  for (const auto& [k, v] : first) keys.insert(k);
  for (const auto& [k, v] : other) keys.insert(k);
  for (const auto& key : keys) {
    const auto a = first.find(key);
    const auto b = other.find(key);
    const std::string va = a == first.end() ? "(absent)" : a->second;
    const std::string vb = b == other.end() ? "(absent)" : b->second;
    if (va != vb) {
      throw Error(fmt::format("parts '{}' and '{}' come from different runs: {} differs ('{}' vs '{}'); "
                              "only parts of one run (same ptqkit, model, data and options) can be merged",
                              first_name, other_name, key, va, vb));
    }
  }
}

}  // namespace ptqkit::shard
