// ScoreSensitivity(): ranks op types or single nodes by how much quantizing *only that target*
// changes the model's graph outputs (DESIGN.md "Sensitivity scan and picker").
//
// Calibration happens once for all probes (the FP32 activation statistics do not depend on the
// target), the FP32 reference outputs are computed once, and each probe is built in memory from
// the shared scales. Targets whose probe inserts no Q/DQ or fails are reported under `failed`.
// Reads the model and data only; writes nothing (the caller writes the JSON).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ptqkit/run_options.h"
#include "ptqkit/tensor.h"
#include "ptqkit/sensitivity_result.h"

namespace ptqkit {

// The model, data, calibration and runtime fields (onnx_path, calibration_data_path, ...,
// calibration_cache: a calibration table from `ptqkit calibrate` or `quantize
// --save_calibration_cache` to take the ranges from; tensors it lacks stay float in the probes) are
// SharedRunOptions' (ptqkit/run_options.h), shared with quantize.
struct SensitivityOptions : SharedRunOptions {
  const std::map<std::string, HostTensor>* calibration_tensors = nullptr;
  int64_t num_calib_samples = 100;                          // synthetic samples (only without data)
  std::string granularity = "op_type";                      // op_type | node
  std::string metric = "kl_div";                            // kl_div | mse | cos
  std::string target_precision = "int8";                    // int8 | fp8
  std::string calibration_method = "mse";                   // max | entropy | percentile | mse
  std::vector<std::string> op_types_scope;                  // empty: the default scope
  // FP32 activations cached for probe sub-graphs, in MiB; above it every probe runs the whole
  // model on the calibration inputs (slower, same scores). 0: always whole-model probes.
  int64_t activation_cache_limit_mb = 2048;
  // Samples per chunk of the scan (see --probe_chunk_samples): the FP32 reference caches one
  // chunk's activations at a time and every probe runs on it. 0: as many as the cache limit holds.
  int64_t probe_chunk_samples = 0;
  // Stop sampling a target once its ranking is settled (scan/settling.h); the scores file then
  // records each target's samples and interval. Shards settle among their own targets.
  bool stop_when_settled = true;
  // A [batch, sequence] input that is 0 at padding (--eval_mask_input): the positions it marks are
  // left out of every output shaped [batch, sequence, ...] when probes are scored. "": the model's
  // input `attention_mask` when it has one; "none": none.
  std::string mask_input;
  // Score only targets i with i % shard_count == shard_index (see ScoreSensitivityShard in
  // scan/sensitivity_shard.h); ScoreSensitivity() requires shard_count == 1.
  int64_t shard_index = 0;
  int64_t shard_count = 1;
  std::function<void(int64_t, int64_t)> progress;           // (probes done, probes total)
  // Files the caller will write (the JSON, the report), as (path, option name): refused up front
  // when one is a file the scan reads (model, its external data, calibration data).
  std::vector<std::pair<std::string, std::string>> output_files;
};

// Throws ptqkit::Error for bad options, model or data.
SensitivityResult ScoreSensitivity(const SensitivityOptions& options);

// The op types probed when no scope is given: present in the graph and quantizable, activation,
// normalization or reduction ops; graph plumbing (Cast, Shape, Reshape, ...) is never probed.
bool InDefaultSensitivityScope(const std::string& op_type);

}  // namespace ptqkit
