// ShardSpec: which of N equal jobs this process is ("--shard K/N", K counted from 0 like Slurm's
// SLURM_ARRAY_TASK_ID with --array=0-(N-1) and Kubernetes' JOB_COMPLETION_INDEX).
//
// Calibration takes a contiguous slice of the batches (each shard reads one stretch of the data
// files); the sensitivity scan takes every N-th target (probes early in the graph recompute more
// of it than late ones, so striding balances the shards' work). Both are pure functions of
// (K, N, total), so every machine computes the same split without talking to the others.
// Plain values; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ptqkit::shard {

struct ShardSpec {
  int64_t index = 0;  // K, 0 <= K < N
  int64_t count = 1;  // N >= 1
  bool operator==(const ShardSpec&) const = default;
};

// "K/N" with 0 <= K < N. Throws ptqkit::Error naming the text and the expected form.
ShardSpec ParseShard(std::string_view text);
// "K/N".
std::string ShardName(const ShardSpec& shard);

// [begin, end) of `total` items for a contiguous split: shard K takes [K*total/N, (K+1)*total/N).
std::pair<int64_t, int64_t> ContiguousSlice(int64_t total, const ShardSpec& shard);
// Strided split: item i belongs to shard i % N.
inline bool OwnsStrided(int64_t item, const ShardSpec& shard) { return item % shard.count == shard.index; }

// Checks that `shards` (one per part, `names` their files, same length) are exactly 0/N .. N-1/N
// of one N, each once. Throws ptqkit::Error naming the duplicate, the missing shard or the part
// whose N differs.
void RequireCompleteSet(const std::vector<ShardSpec>& shards, const std::vector<std::string>& names);

}  // namespace ptqkit::shard
