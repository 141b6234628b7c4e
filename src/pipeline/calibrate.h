// Calibrate(): the calibration pass on its own (`ptqkit calibrate`), whole or as one shard.
//
// It calibrates every tensor a later run could need from one table: the activation tensors that
// `quantize` with the same options plans (control-flow subgraphs included) and every other
// non-constant tensor a main-graph node reads, which is what a sensitivity scan probes at any
// granularity and scope. So one table serves `quantize --calibration_cache` and
// `sensitivity --calibration_cache`, and the merged parts of a sharded calibration are that table.
#pragma once

#include "ptqkit/quantize.h"
#include "shard/calibration_part.h"

namespace ptqkit {

// Statistics of shard `shard`'s slice of the calibration batches (all of them for 0/1), with the
// fingerprint of the run (the same for every shard). For a whole run, part.table.source is that
// fingerprint already. Uses the model, data, mode, method (max = no histograms), selectors and
// runtime options of `options`; the output and rewrite options are ignored.
// Throws ptqkit::Error for bad options, model or data (int4 has no calibration table).
shard::CalibrationPart Calibrate(const QuantizeOptions& options, const shard::ShardSpec& shard);

}  // namespace ptqkit
