// ProbeSessions: scores the probes of a scan against the cached FP32 reference. A probe that can
// run as a sub-graph on cached boundary activations is rewritten into a sub-model and queued;
// queued sub-models run kProbesPerSession at a time in one merged ONNX Runtime session (fewer
// session start-ups); when a merged session fails, its probes run one by one, so the failure is
// attributed to the probe that caused it. Without cached boundaries every probe runs the whole
// model. Scores, failures and non-finite probes go into the caller's SensitivityResult.
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
#include "quant/formats.h"
#include "runtime/session.h"
#include "scan/probe_eval.h"
#include "scan/probes.h"
#include "sensitivity/metrics.h"

namespace ptqkit {

struct ProbeContext {
  const std::vector<Probe>* probes;
  const onnx::ModelProto* model;            // the prepared FP32 model
  const Reference* reference;               // its cached outputs (and boundary activations)
  const EvalBatches* eval;
  sensitivity::Metric metric;
  const std::map<std::string, float>* amax;  // calibrated ranges of the probes' tensors
  const QuantFormat* format;
  RuntimeOptions runtime;                    // for the probe sessions
  std::function<void()> progress;            // called once per probe scored or failed
};

class ProbeSessions {
 public:
  ProbeSessions(const ProbeContext& context, SensitivityResult* result);

  // Scores probe `i` (REQUIRES: its cut was computed), now or when its session runs.
  void Evaluate(size_t i);
  // Runs the queued probes. Call once after the last Evaluate().
  void Flush();
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
  void RunMerged();

  ProbeContext c_;
  SensitivityResult* result_;
  onnx::ModelProto skeleton_;  // the model without initializers; probes add the weights they read
  std::set<std::string> original_initializers_;
  bool light_ = false;  // probes hold codes and placeholders, not weights (see Evaluate)
  std::map<std::string, const onnx::TensorProto*> weight_source_;  // when light_: the model's initializers
  std::vector<Pending> pending_;
  double run_seconds_ = 0.0;
};

}  // namespace ptqkit
