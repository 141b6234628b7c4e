#include "ptqkit/quantize.h"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <set>

#include "base/log.h"
#include "calib/method.h"
#include "calib/scale_search.h"
#include "onnx/graph_index.h"
#include "onnx/model_prep.h"
#include "onnx/onnx_library.h"
#include "pipeline/activation_capture.h"
#include "pipeline/model_output.h"
#include "pipeline/prepared_model.h"
#include "pipeline/quantize_int4.h"
#include "ptqkit/calibration.h"
#include "ptqkit/error.h"
#include "quant/model_placement.h"
#include "quant/qdq_rewrite.h"

namespace ptqkit {
namespace fs = std::filesystem;
namespace {

using Clock = std::chrono::steady_clock;

std::string DefaultOutputPath(const std::string& input) {
  const fs::path in(input);
  return (in.parent_path() / (in.stem().string() + ".quant.onnx")).string();
}

void CheckOptions(const QuantizeOptions& o, const std::string& output) {
  if (o.onnx_path.empty()) throw Error("--onnx_path is required");
  if (o.quantize_mode != "int8" && o.quantize_mode != "fp8" && o.quantize_mode != "int4") {
    throw Error(fmt::format("unknown --quantize_mode '{}' (expected int8, fp8 or int4)", o.quantize_mode));
  }
  if (o.quantize_mode != "int4" && !o.calibration_method.empty() && IsInt4CalibrationMethod(o.calibration_method)) {
    throw Error(fmt::format("--calibration_method {} applies to --quantize_mode int4 only (int8/fp8 take max, entropy, "
                            "percentile or mse)",
                            o.calibration_method));
  }
  if (o.high_precision_dtype != "fp32" && o.high_precision_dtype != "fp16" && o.high_precision_dtype != "bf16") {
    throw Error(fmt::format("unknown --high_precision_dtype '{}' (expected fp32, fp16 or bf16)", o.high_precision_dtype));
  }
  if (!(o.percentile > 0.0 && o.percentile <= 100.0)) {
    throw Error(fmt::format("--percentile must be in (0, 100], got {}", o.percentile));
  }
  if (o.calibration_batch_size < 0) throw Error("--calibration_batch_size must be positive");
  if (o.intra_op_num_threads < 0) {
    throw Error(fmt::format("--intra_op_num_threads must be 0 (ONNX Runtime's default) or more, got {}",
                            o.intra_op_num_threads));
  }
  for (const auto& ep : o.calibration_eps) CheckExecutionProviderName(ep);
  std::error_code ec;
  const fs::path dir = fs::path(output).parent_path().empty() ? fs::path(".") : fs::path(output).parent_path();
  if (!fs::is_directory(dir, ec)) {
    throw Error(fmt::format("cannot write '{}': folder '{}' does not exist", output, dir.string()), Error::Kind::kIo);
  }
}

// Per-tensor ranges from the calibration statistics of the plan's activation tensors.
std::map<std::string, float> TensorRanges(const ModelPlacement& plan, const calib::CalibrationTable& table,
                                          calib::Method method, double percentile, calib::Grid grid) {
  std::map<std::string, float> amax;
  for (const auto& name : plan.ActivationTensors()) {
    auto it = table.tensors.find(name);
    if (it != table.tensors.end()) amax[name] = calib::ComputeAmax(it->second, method, percentile, grid);
  }
  return amax;
}

}  // namespace

QuantizeReport Quantize(const QuantizeOptions& o) {
  const auto start = Clock::now();
  QuantizeReport report;
  report.output_path = o.output_path.empty() ? DefaultOutputPath(o.onnx_path) : o.output_path;
  CheckOptions(o, report.output_path);
  QuantizeFiles(o, report.output_path).Check();  // again with external data, once the model is read
  if (o.quantize_mode == "int4") return QuantizeInt4(o, std::move(report), start);
  // No method means mse for the activation-calibrated modes (ModelOpt defaults int8 to entropy;
  // mse is never far from max and often better on real models, where entropy can lose a lot).
  report.calibration_method = o.calibration_method.empty() ? "mse" : o.calibration_method;
  const calib::Method method = calib::ParseMethod(report.calibration_method);

  PreparedModel prepared = LoadPreparedModel(o.onnx_path, QuantizeFiles(o, report.output_path));
  onnx::ModelProto& model = prepared.proto;
  report.original_opset = prepared.original_opset;
  const bool fp8 = o.quantize_mode == "fp8";
  if (fp8) onnxio::UpgradeOpset(&model, 19);  // FLOAT8E4M3FN Q/DQ exist from opset 19
  report.output_opset = onnxio::DefaultOpset(model);
  ModelPlacement plan(&model, {o.op_types_to_quantize, o.op_types_to_exclude, o.nodes_to_quantize, o.nodes_to_exclude, fp8});

  calib::CalibrationTable table;
  const auto calib_start = Clock::now();
  if (!o.calibration_cache.empty()) {
    table = calib::CalibrationTable::Load(o.calibration_cache);
    report.calibration_from_cache = true;
  } else {
    CalibrationData data = OpenCalibrationData(prepared, CalibrationRequest(o));
    report.synthetic_data = data.synthetic;
    CaptureRequest request;
    request.tensors = plan.ActivationTensors();
    request.histograms = method != calib::Method::kMax;
    request.batch_size = data.batch_size;
    request.num_batches = data.num_batches;
    request.progress = o.progress;
    RuntimeOptions runtime = Runtime(o);
    CaptureResult captured = CaptureStatistics(model, data.set, request, runtime);
    for (const auto& t : captured.not_float) plan.DropTensor(t, "input is not a float tensor");
    table = std::move(captured.table);
    for (const auto& [name, stats] : table.tensors) {
      // A tensor that never took a value has no range: a control-flow branch that no calibration
      // sample takes (an If on a sample rate the data does not use). Its nodes stay in float.
      // (A tensor that took only NaN/Inf is an error further on, naming it.)
      if (stats.finite_count() == 0 && stats.nonfinite_count() == 0) {
        log::Warn("tensor '{}' was never computed during calibration (a control-flow branch the data never takes?); "
                  "the nodes reading it stay in float",
                  name);
        plan.DropTensor(name, "its input was never computed during calibration");
      }
    }
    report.execution_providers = captured.providers;
    report.num_calibration_samples = captured.num_samples;
    report.batch_size = request.batch_size;
    for (const auto& [name, stats] : table.tensors) {
      if (stats.nonfinite_count() > 0) {
        log::Warn("tensor '{}': {} NaN/Inf value(s) ignored during calibration", name, stats.nonfinite_count());
      }
    }
  }
  report.calibration_seconds = std::chrono::duration<double>(Clock::now() - calib_start).count();

  const calib::Grid grid = fp8 ? calib::Grid::kFp8E4M3 : calib::Grid::kInt8;
  const std::map<std::string, float> amax = plan.Ranges(TensorRanges(plan, table, method, o.percentile, grid));
  report.quantized_by_op_type = plan.QuantizedByOpType();
  report.left_in_float = plan.LeftInFloat();

  RewriteOptions rewrite;
  rewrite.dq_only = o.dq_only;
  rewrite.format = fp8 ? QuantFormat::kFloat8E4M3FN : QuantFormat::kInt8;
  const RewriteStats stats = plan.Rewrite(amax, rewrite);
  report.qdq_pairs = stats.qdq_pairs;
  const bool user_excluded = !o.nodes_to_exclude.empty() || !o.op_types_to_exclude.empty();
  if (stats.qdq_pairs == 0 && user_excluded) {
    log::Warn("every quantization candidate was excluded: the output has no Q/DQ node");
  } else if (stats.qdq_pairs == 0) {
    // Writing the FP32 model under a quantized name would hide that nothing was done.
    std::string why;
    for (size_t k = 0; k < std::min<size_t>(3, report.left_in_float.size()); ++k) {
      why += fmt::format("; '{}' {}", report.left_in_float[k].first, report.left_in_float[k].second);
    }
    throw Error(fmt::format("no node of '{}' was quantized ({} candidate(s) left in float{}); nothing was written. "
                            "Choose nodes with --op_types_to_quantize or --nodes_to_quantize",
                            o.onnx_path, report.left_in_float.size(), why),
                Error::Kind::kUnsupported);
  }
  ConvertAndSave(&model, o, &report);
  // After the model: a save that fails leaves no calibration cache behind.
  if (!o.save_calibration_cache.empty()) table.Save(o.save_calibration_cache);
  report.total_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return report;
}

}  // namespace ptqkit
