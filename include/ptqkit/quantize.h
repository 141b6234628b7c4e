// Quantize(): the whole post-training quantization of one ONNX model — load, validate data,
// plan Q/DQ placement, calibrate with one streaming pass of ONNX Runtime, insert Q/DQ, save.
// Option names and defaults follow ModelOpt's `modelopt.onnx.quantization.quantize`.
//
// The input model and data files are only read. The output is written atomically (temporary file
// in the output folder, then rename), so on any error nothing is left behind.
// Not re-entrant with respect to logging settings; otherwise independent calls may run in parallel.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ptqkit/tensor.h"

namespace ptqkit {

struct QuantizeOptions {
  std::string onnx_path;
  std::string output_path;  // default: <input folder>/<stem>.quant.onnx
  std::string quantize_mode = "int8";

  // Calibration data: a path (.npy / .npz / folder), or tensors in memory (name -> samples on
  // axis 0; "" binds to the only input). Neither: seeded synthetic data, with a warning.
  std::string calibration_data_path;
  std::optional<std::map<std::string, HostTensor>> calibration_tensors;
  int64_t num_synthetic_samples = 32;
  uint64_t synthetic_seed = 0;

  // int8/fp8: max | entropy | percentile | mse (activation ranges); int4: rtn | awq_clip | awq_lite
  // (weight clipping; awq_lite: activation-aware input-channel scaling, 1/s applied by a Mul on
  // the activation). "" = the mode's default, mse for int8/fp8 (ModelOpt: entropy), awq_clip for int4.
  std::string calibration_method;
  double percentile = 99.999;
  std::map<std::string, std::vector<int64_t>> calibration_shapes;  // input -> shape; axis 0 = batch
  int64_t calibration_batch_size = 0;                               // 0: from shapes / model / 1
  std::map<std::string, int64_t> calibration_batch_axis;  // input -> sample axis (else inferred)
  std::vector<std::string> calibration_eps = {"cpu"};
  std::vector<std::string> trt_plugins;
  int intra_op_num_threads = 0;

  std::vector<std::string> op_types_to_quantize;
  std::vector<std::string> op_types_to_exclude;
  std::vector<std::string> nodes_to_quantize;
  std::vector<std::string> nodes_to_exclude;

  bool dq_only = false;

  // The runtime the output is for. "trt" (default): TensorRT's explicit-quantization patterns.
  // "ort_cpu": the same placement in the form ONNX Runtime's CPU graph optimizations handle as
  // intended — FP8 Q/DQ without zero points (QuantizeLinear's output_dtype, opset raised to 21),
  // because ONNX Runtime's Relu/Clip + QuantizeLinear rewrites misread FP8 zero points.
  std::string target_runtime = "trt";
  // int8: 7-bit weights (scale = amax/63), for ONNX Runtime's u8s8 kernels on x86 CPUs without
  // VNNI, whose 16-bit pair sums saturate with full-range weights (its quantizer's reduce_range).
  bool reduce_range = false;

  // int4 only: blocks of block_size weights along K share a scale (-1: one block per output
  // channel); use_zero_point stores UINT4 with zero points instead of symmetric INT4; the
  // awq_clip search tries alpha = 1 - s * awqclip_alpha_step down to awqclip_alpha_min.
  int64_t block_size = 128;
  bool use_zero_point = false;
  double awqclip_alpha_step = 0.05;
  double awqclip_alpha_min = 0.5;
  std::string high_precision_dtype = "fp32";  // fp32 | fp16 | bf16 (everything not quantized)
  std::vector<std::string> op_types_to_exclude_fp16;  // fp16/bf16: op types kept in float32
  bool direct_io_types = false;  // fp16/bf16: graph inputs/outputs change type (no boundary Casts)
  bool use_external_data_format = false;

  std::string save_calibration_cache;  // write the CalibrationTable JSON here
  std::string calibration_cache;       // read it from here instead of calibrating

  // Called after each calibration batch with (batches done, total batches).
  std::function<void(int64_t, int64_t)> progress;
};

struct QuantizeReport {
  std::string output_path;
  int64_t original_opset = 0;
  int64_t output_opset = 0;
  std::map<std::string, int> quantized_by_op_type;                 // op type -> nodes with Q/DQ inputs
  std::vector<std::pair<std::string, std::string>> left_in_float;  // (node, reason), graph order
  int qdq_pairs = 0;
  std::string calibration_method;  // the method used (the mode's default when none was given)
  int64_t num_calibration_samples = 0;
  int64_t batch_size = 0;
  bool synthetic_data = false;
  bool calibration_from_cache = false;
  double calibration_seconds = 0.0;
  double total_seconds = 0.0;
  std::vector<std::string> execution_providers;
};

// Throws ptqkit::Error with a one-line message naming what is wrong.
QuantizeReport Quantize(const QuantizeOptions& options);

}  // namespace ptqkit
