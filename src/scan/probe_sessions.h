// ProbeSessions: scores the probes of a scan against the cached FP32 reference, one chunk of
// evaluation batches at a time (SetReference). A probe that can run as a sub-graph on cached
// boundary activations is rewritten into a sub-model and queued; queued sub-models run
// kProbesPerSession at a time in one merged ONNX Runtime session (fewer session start-ups); when a
// merged session fails, its probes run one by one, so the failure is attributed to the probe that
// caused it. Without cached boundaries every probe runs the whole model. Each probe's per-sample
// comparisons accumulate over chunks; a probe leaves the scan when it fails, turns the outputs
// non-finite (it then ranks first), or is finished (Finish, e.g. once its ranking is settled).
// Scores, failures and non-finite probes go into the caller's SensitivityResult.
// Borrows everything it is given; not thread-safe.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstddef>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ptqkit/sensitivity_result.h"
#include "quant/formats/formats.h"
#include "runtime/session.h"
#include "scan/probe_eval.h"
#include "scan/probes.h"
#include "sensitivity/metrics.h"

namespace ptqkit {

struct ProbeContext {
  const std::vector<Probe>* probes;
  const onnx::ModelProto* model;            // the prepared FP32 model
  const Reference* reference;               // its cached outputs (and boundary activations): one chunk
  const EvalBatches* eval;
  sensitivity::Metric metric;
  const std::map<std::string, float>* amax;  // calibrated ranges of the probes' tensors
  const QuantFormat* format;
  RuntimeOptions runtime;                    // for the probe sessions
  std::function<void()> progress;            // called once per probe finished, failed or non-finite
};

class ProbeSessions {
 public:
  ProbeSessions(const ProbeContext& context, SensitivityResult* result);

  // The chunk the next Evaluate() calls run on. REQUIRES: Flush() since the last Evaluate().
  void SetReference(const Reference* reference) { c_.reference = reference; }
  // Adds probe `i`'s comparisons on the current chunk (REQUIRES: its cut was computed; Active(i)),
  // now or when its session runs.
  void Evaluate(size_t i);
  // Runs the queued probes. Call after the last Evaluate() of each chunk.
  void Flush();
  // Still being sampled: neither failed, non-finite nor finished.
  bool Active(size_t i) const { return !done_.count(i); }
  // Probe `i`'s comparisons so far (nullptr before its first chunk).
  const sensitivity::ScoreAccumulator* Accumulated(size_t i) const;
  // Writes probe `i`'s score from the samples it has seen; it takes no more. REQUIRES: Active(i).
  void Finish(size_t i);
  // ONNX Runtime time of the probe sessions (the rest is graph building).
  double onnxruntime_seconds() const { return run_seconds_; }

 private:
  struct Pending {
    size_t probe;
    onnx::ModelProto submodel;
    std::vector<std::string> outputs;  // graph outputs of the original model it recomputes
  };
  void Record(size_t i, const ProbeOutputs& outputs);
  void Fail(size_t i, const std::string& why);
  void NonFinite(size_t i, const std::string& why);
  void RunMerged();

  ProbeContext c_;
  SensitivityResult* result_;
  onnx::ModelProto skeleton_;  // the model without initializers; probes add the weights they read
  std::set<std::string> original_initializers_;
  bool light_ = false;  // probes hold codes and placeholders, not weights (see Evaluate)
  std::map<std::string, const onnx::TensorProto*> weight_source_;  // when light_: the model's initializers
  std::vector<Pending> pending_;
  std::map<size_t, sensitivity::ScoreAccumulator> scores_;  // per probe
  std::set<size_t> done_;
  double run_seconds_ = 0.0;
};

}  // namespace ptqkit
