#include "runtime/session.h"

#include <fmt/format.h>
#include <onnxruntime_cxx_api.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <regex>

#include "base/log.h"
#include "ptqkit/error.h"

namespace ptqkit {
namespace {

Ort::Env& SharedEnv() {
  // One environment per process, as ONNX Runtime requires; created on first use.
  static Ort::Env env(ORT_LOGGING_LEVEL_ERROR, "ptqkit");
  return env;
}

bool Offered(const std::string& ort_name) {
  const auto all = Ort::GetAvailableProviders();
  return std::find(all.begin(), all.end(), ort_name) != all.end();
}

}  // namespace

void CheckExecutionProviderName(const std::string& name) {
  static const std::regex kValid("cpu|trt|cuda(:[0-9]+)?");
  if (!std::regex_match(name, kValid)) {
    throw Error(fmt::format("--calibration_eps: unknown execution provider '{}' (expected cpu, cuda:N or trt)", name));
  }
}

struct InferenceSession::Impl {
  std::unique_ptr<Ort::Session> session;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::map<std::string, DataType> output_types;
  std::vector<std::string> providers;
  Ort::MemoryInfo cpu = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
};

InferenceSession::InferenceSession(const std::string& model_bytes, const RuntimeOptions& options)
    : impl_(std::make_unique<Impl>()) {
  try {
    Ort::SessionOptions so;
    if (options.intra_op_threads > 0) so.SetIntraOpNumThreads(options.intra_op_threads);
    so.SetInterOpNumThreads(1);
    so.SetExecutionMode(ORT_SEQUENTIAL);
    if (options.basic_optimizations_only) so.SetGraphOptimizationLevel(ORT_ENABLE_BASIC);
    for (const auto& ep : options.execution_providers) {
      CheckExecutionProviderName(ep);
      if (ep == "cpu") {
        impl_->providers.push_back(ep);
      } else if (ep.rfind("cuda", 0) == 0) {
        if (!Offered("CUDAExecutionProvider")) {
          log::Warn("execution provider '{}' is not available in this ONNX Runtime build; skipped", ep);
          continue;
        }
        OrtCUDAProviderOptions cuda{};
        cuda.device_id = ep.size() > 5 ? std::stoi(ep.substr(5)) : 0;
        so.AppendExecutionProvider_CUDA(cuda);
        impl_->providers.push_back(ep);
      } else if (ep == "trt") {
        if (!Offered("TensorrtExecutionProvider")) {
          log::Warn("execution provider 'trt' is not available in this ONNX Runtime build; skipped");
          continue;
        }
        const auto& api = Ort::GetApi();
        OrtTensorRTProviderOptionsV2* trt = nullptr;
        Ort::ThrowOnError(api.CreateTensorRTProviderOptions(&trt));
        std::string plugins;
        for (const auto& p : options.trt_plugins) plugins += (plugins.empty() ? "" : ";") + p;
        std::vector<const char*> keys, values;
        if (!plugins.empty()) {
          keys.push_back("trt_extra_plugin_lib_paths");
          values.push_back(plugins.c_str());
        }
        if (!keys.empty()) Ort::ThrowOnError(api.UpdateTensorRTProviderOptions(trt, keys.data(), values.data(), keys.size()));
        so.AppendExecutionProvider_TensorRT_V2(*trt);
        api.ReleaseTensorRTProviderOptions(trt);
        impl_->providers.push_back(ep);
      }
    }
    if (std::find(impl_->providers.begin(), impl_->providers.end(), "cpu") == impl_->providers.end()) {
      impl_->providers.push_back("cpu");  // ONNX Runtime always falls back to CPU
    }
    impl_->session = std::make_unique<Ort::Session>(SharedEnv(), model_bytes.data(), model_bytes.size(), so);
    Ort::AllocatorWithDefaultOptions alloc;
    for (size_t i = 0; i < impl_->session->GetInputCount(); ++i) {
      impl_->inputs.emplace_back(impl_->session->GetInputNameAllocated(i, alloc).get());
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
    throw Error(fmt::format("ONNX Runtime cannot load the model: {}", e.what()), Error::Kind::kRuntime);
  }
}

InferenceSession::~InferenceSession() = default;

const std::vector<std::string>& InferenceSession::input_names() const { return impl_->inputs; }
const std::vector<std::string>& InferenceSession::output_names() const { return impl_->outputs; }
const std::vector<std::string>& InferenceSession::providers() const { return impl_->providers; }

DataType InferenceSession::OutputType(const std::string& name) const {
  auto it = impl_->output_types.find(name);
  return it == impl_->output_types.end() ? DataType::kUndefined : it->second;
}

void InferenceSession::Run(const Batch& feeds, const std::vector<std::string>& outputs,
                           const std::function<void(const OutputView&)>& sink) {
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
  std::vector<const char*> out_names;
  for (const auto& o : outputs) out_names.push_back(o.c_str());
  std::vector<Ort::Value> results;
  try {
    results = impl_->session->Run(Ort::RunOptions{nullptr}, in_names.data(), in_values.data(), in_values.size(),
                                  out_names.data(), out_names.size());
  } catch (const Ort::Exception& e) {
    throw Error(fmt::format("ONNX Runtime failed to run the model: {}", e.what()), Error::Kind::kRuntime);
  }
  for (size_t i = 0; i < results.size(); ++i) {
    auto info = results[i].GetTensorTypeAndShapeInfo();
    const std::vector<int64_t> shape = info.GetShape();
    const OutputView view{outputs[i], static_cast<DataType>(info.GetElementType()), shape,
                          results[i].GetTensorRawData(), static_cast<int64_t>(info.GetElementCount())};
    sink(view);
  }
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
