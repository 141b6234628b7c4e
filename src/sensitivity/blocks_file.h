// The --blocks file of `ptqkit exclude`: a JSON object {group: [regex, ...]} (a single regex
// string is accepted too) whose key order is the first-match order. Only the shape is checked
// here; the patterns are compiled (RE2) by the picker, which names a bad one.
// Pure functions apart from reading the file; thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

namespace ptqkit::sensitivity {

using Blocks = std::vector<std::pair<std::string, std::vector<std::string>>>;

// Throws ptqkit::Error naming `path` (and the group) for anything but that shape.
Blocks ReadBlocksFile(const std::string& path);
Blocks ParseBlocks(const nlohmann::ordered_json& json, const std::string& path);

}  // namespace ptqkit::sensitivity
