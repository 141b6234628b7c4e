// Calibrate(): the calibration pass on its own (`ptqkit calibrate`), whole or as one shard.
//
// It observes exactly the tensors the run that will read the table observes when it calibrates
// itself: `quantize`'s plan for the same mode and selectors, or (for_scan) the union of a
// sensitivity scan's probes. Exactly the same set, not a superset: ONNX Runtime fuses nodes
// differently when more tensors are graph outputs, and activations can then differ in the last
// bit. So quantize/sensitivity with --calibration_cache give the bytes they give calibrating
// themselves, and the merged parts of a sharded calibration are that table.
#pragma once

#include "ptqkit/quantize.h"
#include "ptqkit/sensitivity.h"
#include "scan/calibration_part.h"

namespace ptqkit {

// Statistics of shard `shard`'s slice of the calibration batches (all of them for 0/1), with the
// fingerprint of the run (the same for every shard). For a whole run, part.table.source is that
// fingerprint already. Uses the model, data, mode, method (max = no histograms), selectors and
// runtime options of `options`; the output and rewrite options are ignored. With `for_scan`, the
// tensors are those of that scan (its granularity and scope; its precision must be the mode).
// Throws ptqkit::Error for bad options, model or data (int4 has no calibration table).
shard::CalibrationPart Calibrate(const QuantizeOptions& options, const shard::ShardSpec& shard,
                                 const SensitivityOptions* for_scan = nullptr);

}  // namespace ptqkit
