// How a sensitivity scan spends the activation cache (--activation_cache_limit_mb): which FP32
// activations one reference pass keeps, for which probes, on how many samples at a time.
//
// Probes run as sub-graphs fed with FP32 activations at their cut (probe_cut.h). The samples are cut
// into chunks (all of them, or 64 when settling: scan/settling.h) and every probe still sampling
// runs on each chunk. When the cut activations of every probe fit for a chunk of at least
// kMinGroupedChunkSamples, one reference pass per chunk keeps them all. When they do not (a node
// scan of a large CNN keeps nearly every activation: ~290 MB per sample on CoAtNet-0), the probes,
// in graph order, are split into groups whose activations fit for such a chunk, and each group gets
// its own reference pass: a few more FP32 passes instead of chunks of a handful of samples, each of
// which would build every probe's session again. A group whose activations do not fit for one
// batch runs its probes on the whole model. Scores do not depend on the chunking (per-sample
// comparisons are added in sample order).
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "onnx/graph_index.h"
#include "ptqkit/sensitivity.h"
#include "runtime/prepared_model.h"
#include "runtime/session.h"
#include "scan/probe_eval.h"
#include "scan/probe_sessions.h"
#include "scan/probes.h"

namespace ptqkit {

inline constexpr int64_t kMinGroupedChunkSamples = 64;

struct ProbeGroup {
  std::vector<size_t> probes;          // indices into the scan's probes, in scan order
  std::set<std::string> boundaries;    // the activations its reference pass keeps
  bool keep_boundaries = true;         // false: its probes run the whole model
  int64_t batches_per_pass = 1;        // evaluation batches per reference pass (<= the chunk)
};

struct ScanPlan {
  std::vector<ProbeGroup> groups;
  int64_t batches_per_chunk = 1;
  int64_t chunks = 1;
  // When grouped: bytes per batch of each cut activation and of what every pass keeps, and the
  // bytes per batch a group may take. After each chunk the probes still sampling are grouped
  // again: a few unsettled probes need fewer FP32 passes than the first chunk's groups.
  bool grouped = false;
  std::map<std::string, size_t> tensor_bytes;
  size_t always_bytes = 0;
  size_t group_budget = 0;
  size_t limit = 0;
};

// What the reference passes run on: the prepared model, its data and session options.
struct ReferenceSource {
  const onnx::ModelProto* model;
  const CalibrationSet* set;
  RuntimeOptions runtime;
  std::string mask_input;
};

// Computes every probe's cut (Probe::cut) and plans the passes. Runs the FP32 model on one batch
// to measure the activations (unless the limit is 0).
ScanPlan PlanScan(const SensitivityOptions& o, const ReferenceSource& source, const GraphIndex& index,
                  const EvalBatches& eval, std::vector<Probe>* probes);

// Per chunk and group: the FP32 reference, then the group's `owned` probes still sampling; with
// --stop_when_settled the targets whose ranking is settled leave after each chunk (their sampling
// goes into result->sampling). Returns the seconds spent in reference passes.
double RunScanPlan(const SensitivityOptions& o, const ReferenceSource& source, const EvalBatches& eval,
                   const ScanPlan& plan, const std::vector<size_t>& owned, const std::vector<Probe>& probes,
                   ProbeSessions* sessions, SensitivityResult* result);

}  // namespace ptqkit
