// Evaluation of sensitivity probes against the FP32 model.
//
// The FP32 reference runs over a range of the evaluation batches (a chunk) and keeps the graph
// outputs and, when asked, every activation some probe's sub-graph reads at its boundary (see
// probe_cut.h). Probes then run on those cached values and their per-sample comparisons are added
// to a running score, so a scan in chunks scores exactly as one over all batches at once.
// Not thread-safe; values are owned by the Reference.
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "runtime/prepared_model.h"
#include "scan/probe_cut.h"
#include "runtime/session.h"
#include "sensitivity/metrics.h"
#include "sensitivity/padding_mask.h"

namespace ptqkit {

// Batches the FP32 reference and the probes are evaluated on. Calibration batches are the user's
// choice; evaluation only needs the same samples, so a dynamic-batch model is evaluated in larger
// batches (fewer ONNX Runtime calls), a fixed-batch model in its own batch.
struct EvalBatches {
  int64_t batch_size = 1;
  int64_t count = 0;
  int64_t samples = 0;
};

constexpr int64_t kEvalBatchForDynamicModels = 16;

// True when every graph input has a dynamic axis 0.
bool HasDynamicBatch(const PreparedModel& model);
EvalBatches ChooseEvalBatches(const PreparedModel& model, const CalibrationData& data, int64_t samples);

// FP32 values per evaluation batch: graph inputs (the calibration batch, always kept so that
// whole-model probes can be fed), graph outputs (for comparison) and, when they fit in memory,
// every tensor in `boundaries` (has_boundaries tells whether they were kept).
struct Reference {
  std::vector<std::string> output_names;
  int64_t first_batch = 0;                                  // evaluation batch index of batches[0]
  std::vector<std::map<std::string, HostTensor>> batches;  // per batch: tensor -> value
  std::map<std::string, BoundaryType> types;
  bool has_boundaries = false;
  // Outputs whose samples do not lie along axis 0 (declared [static != 1, ..., one dynamic dim,
  // ...], e.g. a recurrent state [layers, B, hidden]): scored as one sample per batch, never split
  // along axis 0.
  std::set<std::string> unsplit_outputs;
  // SensitivityOptions::mask_input, read once per batch (empty: no mask): Score zeroes the padded
  // positions of both outputs (in copies: cached values may feed probes), so that scores read
  // real positions only.
  std::vector<sensitivity::PaddingMask> padding;
};

// Evaluation batches [first_batch, end_batch). With `keep_boundaries` false only graph inputs and
// outputs are kept (has_boundaries is false): probes then run the whole model, fed with the kept
// graph inputs. `mask_input` (--eval_mask_input, "" for none) is read into `padding`; a bad one
// throws here, before any probe runs.
Reference RunReference(const onnx::ModelProto& model, const CalibrationSet& set, const EvalBatches& eval,
                       const std::set<std::string>& boundaries, bool keep_boundaries, const RuntimeOptions& runtime,
                       int64_t first_batch, int64_t end_batch, const std::string& mask_input = "");


using ProbeOutputs = std::vector<std::map<std::string, HostTensor>>;  // per batch: output -> value

// Runs `model` on every evaluation batch, its inputs taken from the reference, and returns the
// values of `outputs` renamed to `names` (same length). Its large initializers are views
// (onnx/session_model.h): of `weights` where `model` holds WeightPlaceholders (probe sub-models),
// else of its own. `all_as_inputs`: see onnxio::MakeSessionModelOver (with `weights` only).
ProbeOutputs RunOnReference(const onnx::ModelProto& model, const onnx::GraphProto* weights,
                            const std::vector<std::string>& outputs,
                            const std::vector<std::string>& names, const Reference& ref, const RuntimeOptions& runtime,
                            bool all_as_inputs = false);

// "" when every float value is finite; otherwise which outputs hold NaN or Inf, e.g.
// "output 'y' NaN (12 of 4096 values)".
std::string NonFiniteOutputs(const ProbeOutputs& probe);

// Adds the probe's per-sample comparisons on `ref`'s batches to `score` (made with
// ref.output_names.size() outputs); its Score() is the sum over graph outputs of the mean over
// samples. An output the probe does not recompute equals the reference and contributes 0. An
// output's axis 0 is the sample axis when it has one row per sample of the batch; otherwise the
// whole output counts as one sample (indexed by its batch).
void AddToScore(const Reference& ref, const ProbeOutputs& probe, const EvalBatches& eval,
                sensitivity::ScoreAccumulator* score);

}  // namespace ptqkit
