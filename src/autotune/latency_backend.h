// LatencyBackend: how long a model takes to run, for the autotune search. One interface over the
// ways ptqkit can time a model: ONNX Runtime on the CPU provider (every machine), ONNX Runtime's
// CUDA and TensorRT providers, TensorRT itself (trtexec), and a cost table (unit tests: a pure,
// deterministic model of latency, not a stand-in for ONNX Runtime).
//
// MakeLatencyBackend never falls back: a GPU backend on a machine without a GPU, CUDA or TensorRT
// throws ptqkit::Error saying which of them was not found (gpu_probe.h).
// A backend is used from one thread at a time.
#pragma once

#include <onnx/onnx_pb.h>

#include <memory>
#include <string>
#include <vector>

#include "ptqkit/autotune.h"
#include "ptqkit/calibration.h"

namespace ptqkit::autotune {

// Median, p10/p90 (nearest rank) and median absolute deviation of `times_ms`. REQUIRES: non-empty.
LatencySummary Summarize(std::vector<double> times_ms);

class LatencyBackend {
 public:
  virtual ~LatencyBackend() = default;
  virtual std::string name() const = 0;
  // Runs `model` warmup_runs times untimed, then timing_runs times timed. Throws ptqkit::Error
  // (kRuntime) when the model cannot be built or run.
  virtual LatencySummary Measure(const onnx::ModelProto& model) = 0;
};

struct BackendRequest {
  std::string backend = "ort_cpu";  // ort_cpu | ort_cuda | ort_trt | tensorrt
  int warmup_runs = 5;
  int timing_runs = 20;
  int threads = 1;  // ort_cpu intra-op threads (0: ONNX Runtime's default)
  int cuda_device = 0;
  std::string trtexec_args;
  std::string timing_cache;
  std::string work_dir;  // tensorrt: where candidate models are written for trtexec
  Batch feeds;           // one batch of inputs every timed run uses
};

std::unique_ptr<LatencyBackend> MakeLatencyBackend(const BackendRequest& request);

}  // namespace ptqkit::autotune
