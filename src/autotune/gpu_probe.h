// What this machine offers for GPU timing: a CUDA driver and device, ONNX Runtime's CUDA and
// TensorRT providers (in the ONNX Runtime library ptqkit loaded), and TensorRT itself (trtexec on
// PATH or in PTQKIT_TENSORRT_BIN). Used to refuse GPU work with a sentence naming what is missing,
// and by --calibration_eps' fallback warning. Probes only; loads nothing permanently.
#pragma once

#include <string>

namespace ptqkit::autotune {

struct GpuProbe {
  bool nvidia_device = false;  // /dev/nvidia0 or /proc/driver/nvidia/gpus/* exists
  bool cuda_driver = false;    // libcuda.so.1 can be loaded
  bool ort_cuda = false;       // ONNX Runtime lists CUDAExecutionProvider
  bool ort_tensorrt = false;   // ... TensorrtExecutionProvider
  std::string trtexec;         // path of trtexec, "" when none was found
};

GpuProbe ProbeGpu();

// "" when `backend` (ort_cuda | ort_trt | tensorrt) can run here; else one sentence: "no GPU /
// TensorRT found: ..." naming each missing piece and how to install it (scripts/setup --gpu).
std::string MissingForBackend(const GpuProbe& probe, const std::string& backend);

}  // namespace ptqkit::autotune
