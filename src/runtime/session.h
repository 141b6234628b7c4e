// InferenceSession: one ONNX Runtime session over an in-memory model, on the execution providers
// the user asked for. ptqkit never runs models itself; every forward pass goes through here.
//
// Execution providers are tried in the order given ("cpu", "cuda:N", "trt"); one that this
// ONNX Runtime build does not offer is reported with a warning and skipped. The CPU provider is
// always the final fallback, as in ONNX Runtime itself.
// A session is not copyable; Run() may be called from one thread at a time.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "onnx/session_model.h"
#include "ptqkit/calibration.h"
#include "ptqkit/tensor.h"

namespace ptqkit {

struct RuntimeOptions {
  std::vector<std::string> execution_providers = {"cpu"};  // --calibration_eps
  std::vector<std::string> trt_plugins;                      // --trt_plugins (TensorRT EP only)
  int intra_op_threads = 0;                                  // 0 = ONNX Runtime's default
  // The Q/DQ graph as written: only ONNX Runtime's basic graph optimizations, less its
  // WeightBiasQuantization (session.cc says why). Needed for FP8 Q/DQ models on the CPU provider,
  // whose default-level fusions in the bundled 1.30 build integer kernels on FP8; and what
  // ptqkit's evaluations (loss report, budget, autotune's check) use for every format.
  bool basic_optimizations_only = false;
  // Provider options by --calibration_eps name (--input_shapes_profile): today the trt entry, passed
  // to ONNX Runtime's TensorRT provider as its own option keys.
  std::map<std::string, std::map<std::string, std::string>> provider_options = {};
  // Non-empty: ONNX Runtime's profiler records every node's kernel time into a trace file whose
  // name starts with this path (autotune's per-region timing); InferenceSession::EndProfiling.
  std::string profile_file_prefix = {};
};

// Whether ONNX Runtime's CPU provider computes INT8 Q/DQ models wrongly on this machine: on x86-64
// without VNNI (AVX2, or AVX-512 without VNNI) its u8s8 integer kernels add pairs of u8*s8 products
// in 16 bits and saturate, which the default optimization level uses for every fused INT8
// Conv/MatMul (EfficientNet-Lite0's INT8 top-1 agreement falls from 0.98 to 0.48 there). The basic
// level (fake-quant) and 7-bit weights (--reduce_range) are right everywhere.
bool OrtInt8KernelsSaturate();

// Parses and checks an EP name; throws ptqkit::Error for anything but cpu, cuda[:N], trt.
void CheckExecutionProviderName(const std::string& name);
// The device of "cuda" (0) or "cuda:N". Throws ptqkit::Error for anything else, including numbers
// too large for a device id.
int CudaDeviceId(const std::string& name);

// A view of one output of a Run(), valid only during the callback.
struct OutputView {
  const std::string& name;
  DataType dtype;
  const std::vector<int64_t>& shape;
  const void* data;
  int64_t num_elements;
};

class InferenceSession {
 public:
  // Throws ptqkit::Error (kRuntime) with ONNX Runtime's message when the model cannot be loaded
  // (for instance an op that no provider implements).
  InferenceSession(const std::string& model_bytes, const RuntimeOptions& options);
  // A model whose large weights are views (onnx/session_model.h): the only way to run a model
  // over 2 GiB. REQUIRES: the ModelProto behind `model.weights` outlives this session.
  InferenceSession(const onnxio::SessionModel& model, const RuntimeOptions& options);
  ~InferenceSession();
  InferenceSession(const InferenceSession&) = delete;
  InferenceSession& operator=(const InferenceSession&) = delete;

  const std::vector<std::string>& input_names() const;
  const std::vector<std::string>& output_names() const;
  // Element type of each output as ONNX Runtime resolved it (kUndefined for non-tensors).
  DataType OutputType(const std::string& name) const;

  // Runs one batch and hands every requested output to `sink` without copying it.
  // REQUIRES: `feeds` has every input of the model. Throws ptqkit::Error (kRuntime).
  void Run(const Batch& feeds, const std::vector<std::string>& outputs,
           const std::function<void(const OutputView&)>& sink);
  // Same, handing all requested outputs to `sink` at once (so they can be processed in parallel).
  void RunBatch(const Batch& feeds, const std::vector<std::string>& outputs,
                const std::function<void(const std::vector<OutputView>&)>& sink);
  // Convenience: runs and returns copies of the outputs, in the order asked.
  std::vector<HostTensor> Run(const Batch& feeds, const std::vector<std::string>& outputs);

  // With RuntimeOptions::profile_file_prefix: stops profiling and returns the trace file's path.
  std::string EndProfiling();

  // The providers actually in use after skipping unavailable ones, e.g. {"cpu"}.
  const std::vector<std::string>& providers() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ptqkit
