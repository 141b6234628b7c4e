// SensitivityPart: what `ptqkit sensitivity --shard K/N` writes — the scores of every N-th target
// (targets K, K+N, K+2N, ... in the scan's target order), plus the fingerprint of the run.
//
// Probes are independent given the calibration ranges and the FP32 reference, and every shard
// computes both exactly as a single run does, so a merged file equals the single-process one (but
// for timings). Merging rebuilds the scan's target order from the stride (target i is entry i / N
// of shard i % N), so "failed" and "non_finite" come out in the same order too.
//
// File format (JSON): {"format": "ptqkit.sensitivity_part", "version": 1, "shard": "K/N",
//   "num_targets": <targets of the whole scan>, "targets": [this shard's targets, in order],
//   "fingerprint": {...}, "result": <sensitivity::ToJson() of this shard's scores>}
// Value type; functions are thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sensitivity/scores_file.h"
#include "scan/fingerprint.h"
#include "scan/shard_spec.h"

namespace ptqkit::shard {

struct SensitivityPart {
  ShardSpec shard;
  Fingerprint fingerprint;
  int64_t num_targets = 0;
  std::vector<std::string> targets;  // this shard's targets (scored, failed or non-finite), in scan order
  SensitivityResult result;          // this shard's targets only
};

// Atomic write. Throws ptqkit::Error (kIo) naming the file.
void SaveSensitivityPart(const SensitivityPart& part, const std::string& path);
// Throws ptqkit::Error naming the file: unreadable, not a part (a whole scores file gets its own
// hint), another part version, a bad field.
SensitivityPart LoadSensitivityPart(const std::string& path);

// The whole scan's result. Timings: each phase's slowest shard (the wall time of a parallel run),
// plus "probes_s_all_shards", the probe time summed over shards. Throws ptqkit::Error when the
// shards are not exactly 0/N..N-1/N, when fingerprints differ (naming the key), when a part's
// targets do not fit the stride, or, like a single scan, when nothing was scored at all.
SensitivityResult MergeSensitivityParts(const std::vector<SensitivityPart>& parts, const std::vector<std::string>& names);

}  // namespace ptqkit::shard
