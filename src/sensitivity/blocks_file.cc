#include "sensitivity/blocks_file.h"

#include <fmt/format.h>

#include "base/json_file.h"
#include "ptqkit/error.h"

namespace ptqkit::sensitivity {

Blocks ReadBlocksFile(const std::string& path) {
  return ParseBlocks(ReadJsonFile<nlohmann::ordered_json>(path, "blocks file"), path);
}

Blocks ParseBlocks(const nlohmann::ordered_json& json, const std::string& path) {
  if (!json.is_object()) {
    throw Error(
        fmt::format("blocks file '{}' must hold an object {{\"group\": [\"regex\", ...]}}", path));
  }
  Blocks blocks;
  for (const auto& [group, value] : json.items()) {
    std::vector<std::string> patterns;
    if (value.is_string()) {
      patterns.push_back(value.get<std::string>());
    } else if (value.is_array()) {
      for (const auto& pattern : value) {
        if (!pattern.is_string()) {
          throw Error(fmt::format("blocks file '{}': group '{}' must list regex strings, found {}",
                                  path, group, pattern.dump()));
        }
        patterns.push_back(pattern.get<std::string>());
      }
    } else {
      throw Error(
          fmt::format("blocks file '{}': group '{}' must be a list of regex strings, found {}",
                      path, group, value.dump()));
    }
    blocks.emplace_back(group, std::move(patterns));
  }
  return blocks;
}

}  // namespace ptqkit::sensitivity
