// CalibrationPart: what `ptqkit calibrate --shard K/N` writes — the calibration statistics of one
// contiguous slice of the calibration batches, plus the fingerprint of the run it belongs to.
//
// Merging is exact because the statistics are: a tensor's absmax, counts and |x| histogram
// (whose range is a power of two and whose bins merge 2:1 exactly, calib/tensor_statistics.h)
// give the same numbers whichever batches were added in whichever order. So the parts of any N,
// merged in any order, give the table a single run writes over all batches, byte for byte.
//
// File format (JSON): {"format": "ptqkit.calibration_part", "version": 1, "shard": "K/N",
//   "num_samples": <samples observed>, "fingerprint": {...}, "table": <CalibrationTable::ToJson()>}
// Value type; functions are thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "calib/calibration_table.h"
#include "scan/fingerprint.h"
#include "scan/shard_spec.h"

namespace ptqkit::shard {

struct CalibrationPart {
  ShardSpec shard;
  Fingerprint fingerprint;
  int64_t num_samples = 0;
  calib::CalibrationTable table;
};

// Atomic write. Throws ptqkit::Error (kIo) naming the file.
void SaveCalibrationPart(const CalibrationPart& part, const std::string& path);
// Throws ptqkit::Error naming the file: unreadable, not a part (a full table gets its own hint),
// another part version, a bad entry.
CalibrationPart LoadCalibrationPart(const std::string& path);

// The table of the whole run, its `source` set to the common fingerprint. `names` are the parts'
// files, for messages. Throws ptqkit::Error when the shards are not exactly 0/N..N-1/N, when
// fingerprints differ (naming the key) or when the parts hold different tensors.
calib::CalibrationTable MergeCalibrationParts(const std::vector<CalibrationPart>& parts,
                                              const std::vector<std::string>& names);

}  // namespace ptqkit::shard
