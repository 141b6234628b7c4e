// ScoreSensitivityShard(): one shard of a sensitivity scan (`ptqkit sensitivity --shard K/N`).
// It calibrates (or reads --calibration_cache) and computes the FP32 reference exactly as a whole
// scan does, then probes only targets K, K+N, ...; shard::MergeSensitivityParts() turns the N
// parts into the whole scan's result.
#pragma once

#include "ptqkit/sensitivity.h"
#include "shard/sensitivity_part.h"

namespace ptqkit {

// REQUIRES: 0 <= options.shard_index < options.shard_count. Throws ptqkit::Error as
// ScoreSensitivity() does, except that a shard that scores nothing is not an error (its targets
// may all legitimately fail; the merge checks the whole).
shard::SensitivityPart ScoreSensitivityShard(const SensitivityOptions& options);

}  // namespace ptqkit
