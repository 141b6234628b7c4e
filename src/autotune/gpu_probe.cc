#include "autotune/gpu_probe.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <onnxruntime_cxx_api.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <vector>

namespace ptqkit::autotune {
namespace fs = std::filesystem;
namespace {

bool HasNvidiaDevice() {
  std::error_code ec;
  if (fs::exists("/dev/nvidia0", ec)) return true;
  return fs::is_directory("/proc/driver/nvidia/gpus", ec) && !fs::is_empty("/proc/driver/nvidia/gpus", ec);
}

bool CanLoad(const char* library) {
  void* handle = ::dlopen(library, RTLD_LAZY | RTLD_LOCAL);
  if (handle == nullptr) return false;
  ::dlclose(handle);
  return true;
}

std::string FindExecutable(const std::string& name) {
  if (const char* explicit_bin = std::getenv("PTQKIT_TENSORRT_BIN")) {
    const fs::path p = fs::path(explicit_bin) / name;
    if (::access(p.c_str(), X_OK) == 0) return p.string();
  }
  const char* path = std::getenv("PATH");
  if (path == nullptr) return "";
  std::stringstream dirs(path);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    const fs::path p = fs::path(dir) / name;
    if (::access(p.c_str(), X_OK) == 0) return p.string();
  }
  return "";
}

bool OrtOffers(const std::string& provider) {
  const auto all = Ort::GetAvailableProviders();
  return std::find(all.begin(), all.end(), provider) != all.end();
}

}  // namespace

GpuProbe ProbeGpu() {
  GpuProbe p;
  p.nvidia_device = HasNvidiaDevice();
  p.cuda_driver = CanLoad("libcuda.so.1");
  p.ort_cuda = OrtOffers("CUDAExecutionProvider");
  p.ort_tensorrt = OrtOffers("TensorrtExecutionProvider");
  p.trtexec = FindExecutable("trtexec");
  return p;
}

std::string MissingForBackend(const GpuProbe& p, const std::string& backend) {
  std::vector<std::string> missing;
  if (!p.nvidia_device) missing.push_back("no NVIDIA GPU device (/dev/nvidia0)");
  if (!p.cuda_driver) missing.push_back("no CUDA driver (libcuda.so.1)");
  // The npm ONNX Runtime ptqkit bundles lists CUDA among its providers but ships no provider
  // library, so a listed provider is necessary, not sufficient: the session reports the rest.
  if (backend == "ort_cuda" && !p.ort_cuda) missing.push_back("ONNX Runtime without the CUDA execution provider");
  if (backend == "ort_trt" && !p.ort_tensorrt) {
    missing.push_back("ONNX Runtime without the TensorRT execution provider");
  }
  if (backend == "tensorrt" && p.trtexec.empty()) missing.push_back("no trtexec on PATH or in PTQKIT_TENSORRT_BIN");
  if (missing.empty()) return "";
  return fmt::format("no GPU / TensorRT found for the {} latency backend: {}. Install the GPU runtime with "
                     "`scripts/setup --gpu` on a machine with an NVIDIA GPU and driver (then put its ONNX Runtime "
                     "first on LD_LIBRARY_PATH, or trtexec on PATH), or time on the CPU with --autotune_backend ort_cpu",
                     backend, fmt::join(missing, "; "));
}

}  // namespace ptqkit::autotune
