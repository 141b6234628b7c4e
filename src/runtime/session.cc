#include "runtime/session.h"

#include <fmt/format.h>
#include <onnxruntime_cxx_api.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <mutex>
#include <cstdlib>

#include "base/log.h"
#include "runtime/ort_message.h"
#include "runtime/run_ops.h"
#include "ptqkit/error.h"

namespace ptqkit {
namespace {

Ort::Env& SharedEnv() {
  // One environment per process, as ONNX Runtime requires; created on first use. Only fatal
  // messages are logged: every error reaches ptqkit as an exception and is reported from there.
  static Ort::Env env = [] {
    // The ONNX Runtime library ptqkit bundles (npm onnxruntime-node) starts Microsoft's 1DS
    // telemetry when the first environment is created. That code reads /proc/self/cmdline and
    // matches it with a recursive std::regex whose depth grows with the command line: about
    // 29 KB of arguments (1000 node names) overflow the 8 MB stack and the process dies with
    // SIGSEGV; it would also upload usage data. ORT_DISABLE_TELEMETRY=1, read at that moment,
    // skips all of it. Set unconditionally: a quantizer must run offline and must not crash on
    // a long command line (the Python extension's host process included).
    ::setenv("ORT_DISABLE_TELEMETRY", "1", 1);
    Ort::Env created(ORT_LOGGING_LEVEL_FATAL, "ptqkit");
    created.DisableTelemetryEvents();
    return created;
  }();
  return env;
}

bool Offered(const std::string& ort_name) {
  const auto all = Ort::GetAvailableProviders();
  return std::find(all.begin(), all.end(), ort_name) != all.end();
}

// A provider can be listed by GetAvailableProviders and still fail to load (the npm build lists
// CUDA but ships no provider libraries), so every append is tried and a failure is a warning.
// ONNX Runtime messages may end in a newline; ptqkit's messages are one line.
std::string OneLine(const char* message) {
  std::string text = StripOrtInternals(message);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

// --calibration_eps falls back to the next provider (the CPU last, as ONNX Runtime does, and as
// ModelOpt, whose default list is "cpu cuda:0 trt"): scales do not depend on where the model ran,
// only the speed does. The warning says what was not found, once per provider and process (the
// budget search and probes open many sessions).
void WarnProviderMissing(const std::string& ep, const std::string& why) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lock(mutex);
  if (!warned.insert(ep).second) return;
  log::Warn("--calibration_eps {}: no GPU / {} found: {}; running on the next provider listed (the CPU last) instead. "
            "GPU calibration needs an NVIDIA GPU and the GPU runtime (scripts/setup --gpu, then its ONNX Runtime first "
            "on LD_LIBRARY_PATH)",
            ep, ep == "trt" ? "TensorRT" : "CUDA", why);
}

bool AddCuda(Ort::SessionOptions* so, const std::string& ep) {
  if (!Offered("CUDAExecutionProvider")) {
    WarnProviderMissing(ep, "the ONNX Runtime loaded has no CUDA execution provider");
    return false;
  }
  try {
    OrtCUDAProviderOptions cuda{};
    cuda.device_id = CudaDeviceId(ep);
    so->AppendExecutionProvider_CUDA(cuda);
    return true;
  } catch (const Ort::Exception& e) {
    WarnProviderMissing(ep, fmt::format("its CUDA execution provider could not be loaded ({})", OneLine(e.what())));
    return false;
  }
}

bool AddTensorRt(Ort::SessionOptions* so, const std::vector<std::string>& plugins,
                 const std::map<std::string, std::string>& extra) {
  if (!Offered("TensorrtExecutionProvider")) {
    WarnProviderMissing("trt", "the ONNX Runtime loaded has no TensorRT execution provider");
    return false;
  }
  const auto& api = Ort::GetApi();
  OrtTensorRTProviderOptionsV2* raw = nullptr;
  try {
    Ort::ThrowOnError(api.CreateTensorRTProviderOptions(&raw));
    std::unique_ptr<OrtTensorRTProviderOptionsV2, void (*)(OrtTensorRTProviderOptionsV2*)> trt(
        raw, api.ReleaseTensorRTProviderOptions);
    std::string joined;
    for (const auto& p : plugins) joined += (joined.empty() ? "" : ";") + p;
    if (!joined.empty()) {
      const char* key = "trt_extra_plugin_lib_paths";
      const char* value = joined.c_str();
      Ort::ThrowOnError(api.UpdateTensorRTProviderOptions(trt.get(), &key, &value, 1));
    }
    // --input_shapes_profile's entry for trt (its trt_profile_*_shapes, ...), as TensorRT's own keys.
    for (const auto& [k, v] : extra) {
      const char* key = k.c_str();
      const char* value = v.c_str();
      Ort::ThrowOnError(api.UpdateTensorRTProviderOptions(trt.get(), &key, &value, 1));
    }
    so->AppendExecutionProvider_TensorRT_V2(*trt);
    return true;
  } catch (const Ort::Exception& e) {
    WarnProviderMissing("trt", fmt::format("its TensorRT execution provider could not be loaded ({})", OneLine(e.what())));
    return false;
  }
}

std::map<std::string, std::string> TrtProviderOptions(const RuntimeOptions& options) {
  auto it = options.provider_options.find("trt");
  return it == options.provider_options.end() ? std::map<std::string, std::string>{} : it->second;
}

}  // namespace

bool OrtInt8KernelsSaturate() {
#if defined(__x86_64__) || defined(__i386__)
  return !__builtin_cpu_supports("avx512vnni") && !__builtin_cpu_supports("avxvnni");
#else
  return false;  // ARM's and other CPUs' integer dot products do not saturate this way
#endif
}

int CudaDeviceId(const std::string& name) {
  if (name == "cuda") return 0;
  const std::string digits = name.substr(5);
  // At most 4 digits: no machine has 10000 GPUs, and std::stoi would throw on 2^31.
  if (name.compare(0, 5, "cuda:") != 0 || digits.empty() || digits.size() > 4 ||
      digits.find_first_not_of("0123456789") != std::string::npos) {
    throw Error(fmt::format("--calibration_eps: '{}' is not a CUDA device (expected cuda or cuda:N, N from 0 to 9999)",
                            name));
  }
  return std::stoi(digits);
}

void CheckExecutionProviderName(const std::string& name) {
  if (name == "cpu" || name == "trt") return;
  if (name.compare(0, 4, "cuda") == 0 && (name.size() == 4 || name[4] == ':')) {
    CudaDeviceId(name);
    return;
  }
  throw Error(fmt::format("--calibration_eps: unknown execution provider '{}' (expected cpu, cuda:N or trt)", name));
}

struct InferenceSession::Impl {
  // Views of the caller's large weights, fed as inputs at every run (the model outlives the session).
  std::vector<onnxio::WeightView> weights;
  // Or the same views as external initializers, which must outlive the session: declared before it.
  std::vector<Ort::Value> external_weights;
  std::unique_ptr<Ort::Session> session;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::map<std::string, DataType> output_types;
  std::vector<std::string> providers;
  Ort::MemoryInfo cpu = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
};

InferenceSession::InferenceSession(const std::string& model_bytes, const RuntimeOptions& options)
    : InferenceSession(onnxio::SessionModel{model_bytes, {}}, options) {}

InferenceSession::InferenceSession(const onnxio::SessionModel& model, const RuntimeOptions& options)
    : impl_(std::make_unique<Impl>()) {
  const std::string& model_bytes = model.graph_bytes;
  try {
    // The environment (and its logger) must exist before any other ONNX Runtime call, including
    // the provider queries below.
    Ort::Env& env = SharedEnv();
    Ort::SessionOptions so;
    if (options.intra_op_threads < 0) {
      throw Error(fmt::format("--intra_op_num_threads must be 0 (ONNX Runtime's default) or more, got {}",
                              options.intra_op_threads));
    }
    if (options.intra_op_threads > 0) so.SetIntraOpNumThreads(options.intra_op_threads);
    so.SetInterOpNumThreads(1);
    so.SetExecutionMode(ORT_SEQUENTIAL);
    AddRunOps(&so);
    if (options.basic_optimizations_only) {
      so.SetGraphOptimizationLevel(ORT_ENABLE_BASIC);
      // WeightBiasQuantization (a basic-level rule) turns the float bias of a Conv/Gemm whose input
      // and weight come out of DequantizeLinear into Cast<int32>(Round(bias / (x_scale * w_scale)))
      // computed in the scales' type: in a float16 model that quotient passes 65504 for FP8 scales
      // (and large INT8 ones), becomes inf and the bias garbage (quant/rewrite/ort_bias_overflow.h). The
      // graph as written keeps the bias in float, as TensorRT does.
      so.AddConfigEntry("optimization.disable_specified_optimizers", "WeightBiasQuantization");
    }
    if (!options.profile_file_prefix.empty()) so.EnableProfiling(options.profile_file_prefix.c_str());
    for (const auto& ep : options.execution_providers) {
      CheckExecutionProviderName(ep);
      const bool added = ep == "cpu" || (ep == "trt" ? AddTensorRt(&so, options.trt_plugins, TrtProviderOptions(options)) : AddCuda(&so, ep));
      if (added) impl_->providers.push_back(ep);
    }
    if (std::find(impl_->providers.begin(), impl_->providers.end(), "cpu") == impl_->providers.end()) {
      impl_->providers.push_back("cpu");  // ONNX Runtime always falls back to CPU
    }
    // The large weights (onnx/session_model.h) are either inputs, fed from the caller's memory at
    // every run, or external initializers; ONNX Runtime only reads them (the const_cast is its C API).
    if (model.weights_as_inputs) {
      impl_->weights = model.weights;
      // The memory pattern reserves one block for a run's peak of intermediates and keeps it; with
      // weights as inputs these include every weight a graph dequantizes (candidates of a model
      // over 2 GiB, built light): measured 0.5 GiB more at peak on a 2.25 GiB chain with it. The
      // arena stays: it hands the one dequantized weight's block to the next, where fresh pages
      // for each (zeroed by the kernel, 64 MiB a weight) took half of a light candidate's runs.
      so.DisableMemPattern();
    } else if (!model.weights.empty()) {
      std::vector<std::string> names;
      for (const auto& w : model.weights) {
        names.push_back(w.name);
        impl_->external_weights.push_back(Ort::Value::CreateTensor(
            impl_->cpu, const_cast<char*>(w.data), w.size, w.dims.data(), w.dims.size(),
            static_cast<ONNXTensorElementDataType>(w.data_type)));
      }
      so.AddExternalInitializers(names, impl_->external_weights);
    }
    impl_->session = std::make_unique<Ort::Session>(env, model_bytes.data(), model_bytes.size(), so);
    Ort::AllocatorWithDefaultOptions alloc;
    std::set<std::string> weights;
    for (const auto& w : impl_->weights) weights.insert(w.name);
    for (size_t i = 0; i < impl_->session->GetInputCount(); ++i) {
      std::string name = impl_->session->GetInputNameAllocated(i, alloc).get();
      if (!weights.count(name)) impl_->inputs.push_back(std::move(name));
    }
    for (size_t i = 0; i < impl_->session->GetOutputCount(); ++i) {
      std::string name = impl_->session->GetOutputNameAllocated(i, alloc).get();
      auto info = impl_->session->GetOutputTypeInfo(i);
      DataType type = DataType::kUndefined;
      if (info.GetONNXType() == ONNX_TYPE_TENSOR) {
        type = static_cast<DataType>(info.GetTensorTypeAndShapeInfo().GetElementType());
      }
      impl_->output_types[name] = type;
      impl_->outputs.push_back(std::move(name));
    }
  } catch (const Ort::Exception& e) {
    throw Error(fmt::format("ONNX Runtime cannot load the model: {}", OneLine(e.what())), Error::Kind::kRuntime);
  }
}

InferenceSession::~InferenceSession() = default;

const std::vector<std::string>& InferenceSession::input_names() const { return impl_->inputs; }
const std::vector<std::string>& InferenceSession::output_names() const { return impl_->outputs; }
const std::vector<std::string>& InferenceSession::providers() const { return impl_->providers; }

std::string InferenceSession::EndProfiling() {
  try {
    Ort::AllocatorWithDefaultOptions alloc;
    return impl_->session->EndProfilingAllocated(alloc).get();
  } catch (const Ort::Exception& e) {
    throw Error(fmt::format("ONNX Runtime could not end profiling: {}", OneLine(e.what())), Error::Kind::kRuntime);
  }
}

DataType InferenceSession::OutputType(const std::string& name) const {
  auto it = impl_->output_types.find(name);
  return it == impl_->output_types.end() ? DataType::kUndefined : it->second;
}

void InferenceSession::RunBatch(const Batch& feeds, const std::vector<std::string>& outputs,
                                const std::function<void(const std::vector<OutputView>&)>& sink) {
  std::vector<const char*> in_names;
  std::vector<Ort::Value> in_values;
  for (const auto& name : impl_->inputs) {
    auto it = feeds.find(name);
    if (it == feeds.end()) throw Error(fmt::format("no data for model input '{}'", name));
    const HostTensor& t = it->second;
    in_names.push_back(name.c_str());
    // ONNX Runtime reads the feed in place; it never writes to inputs.
    in_values.push_back(Ort::Value::CreateTensor(impl_->cpu, const_cast<std::byte*>(t.bytes.data()), t.bytes.size(),
                                                 t.shape.data(), t.shape.size(),
                                                 static_cast<ONNXTensorElementDataType>(t.dtype)));
  }
  for (const auto& w : impl_->weights) {
    in_names.push_back(w.name.c_str());
    in_values.push_back(Ort::Value::CreateTensor(impl_->cpu, const_cast<char*>(w.data), w.size, w.dims.data(),
                                                 w.dims.size(), static_cast<ONNXTensorElementDataType>(w.data_type)));
  }
  std::vector<const char*> out_names;
  for (const auto& o : outputs) out_names.push_back(o.c_str());
  std::vector<Ort::Value> results;
  try {
    results = impl_->session->Run(Ort::RunOptions{nullptr}, in_names.data(), in_values.data(), in_values.size(),
                                  out_names.data(), out_names.size());
  } catch (const Ort::Exception& e) {
    throw Error(fmt::format("ONNX Runtime failed to run the model: {}", OneLine(e.what())), Error::Kind::kRuntime);
  }
  std::vector<std::vector<int64_t>> shapes(results.size());
  std::vector<OutputView> views;
  views.reserve(results.size());
  for (size_t i = 0; i < results.size(); ++i) {
    auto info = results[i].GetTensorTypeAndShapeInfo();
    shapes[i] = info.GetShape();
    views.push_back({outputs[i], static_cast<DataType>(info.GetElementType()), shapes[i],
                     results[i].GetTensorRawData(), static_cast<int64_t>(info.GetElementCount())});
  }
  sink(views);
}

void InferenceSession::Run(const Batch& feeds, const std::vector<std::string>& outputs,
                           const std::function<void(const OutputView&)>& sink) {
  RunBatch(feeds, outputs, [&](const std::vector<OutputView>& views) {
    for (const auto& v : views) sink(v);
  });
}

std::vector<HostTensor> InferenceSession::Run(const Batch& feeds, const std::vector<std::string>& outputs) {
  std::vector<HostTensor> copies;
  Run(feeds, outputs, [&](const OutputView& v) {
    HostTensor t(v.dtype, v.shape);
    const auto* src = static_cast<const std::byte*>(v.data);
    std::copy(src, src + t.bytes.size(), t.bytes.begin());
    copies.push_back(std::move(t));
  });
  return copies;
}

}  // namespace ptqkit
