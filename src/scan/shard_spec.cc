#include "scan/shard_spec.h"

#include <fmt/format.h>

#include <charconv>
#include <map>

#include "ptqkit/error.h"

namespace ptqkit::shard {
namespace {

bool ParseCount(std::string_view text, int64_t* out) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

ShardSpec ParseShard(std::string_view text) {
  const size_t slash = text.find('/');
  ShardSpec s;
  if (slash == std::string_view::npos || !ParseCount(text.substr(0, slash), &s.index) ||
      !ParseCount(text.substr(slash + 1), &s.count) || s.count < 1 || s.index < 0 || s.index >= s.count) {
    throw Error(fmt::format("--shard '{}': expected K/N with N >= 1 and 0 <= K < N (K counts from 0, e.g. 0/4 .. 3/4)",
                            text));
  }
  return s;
}

std::string ShardName(const ShardSpec& shard) { return fmt::format("{}/{}", shard.index, shard.count); }

std::pair<int64_t, int64_t> ContiguousSlice(int64_t total, const ShardSpec& shard) {
  return {total * shard.index / shard.count, total * (shard.index + 1) / shard.count};
}

void RequireCompleteSet(const std::vector<ShardSpec>& shards, const std::vector<std::string>& names) {
  if (shards.empty()) throw Error("nothing to merge: no part files given");
  const int64_t n = shards.front().count;
  std::map<int64_t, std::string> seen;
  for (size_t i = 0; i < shards.size(); ++i) {
    if (shards[i].count != n) {
      throw Error(fmt::format("part '{}' is shard {} but part '{}' is shard {}: parts of different splits cannot be merged",
                              names[i], ShardName(shards[i]), names[0], ShardName(shards[0])));
    }
    auto [it, fresh] = seen.emplace(shards[i].index, names[i]);
    if (!fresh) {
      throw Error(fmt::format("shard {} is given twice: '{}' and '{}'", ShardName(shards[i]), it->second, names[i]));
    }
  }
  for (int64_t k = 0; k < n; ++k) {
    if (!seen.count(k)) {
      throw Error(fmt::format("shard {}/{} is missing: {} of {} part(s) given", k, n, shards.size(), n));
    }
  }
}

}  // namespace ptqkit::shard
