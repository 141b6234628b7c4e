#include "pipeline/calibrate.h"

#include <fmt/format.h>

#include <set>

#include "calib/method.h"
#include "onnx/model_prep.h"
#include "onnx/onnx_library.h"
#include "runtime/activation_capture.h"
#include "pipeline/loss_measurement.h"
#include "data/run_digests.h"
#include "pipeline/model_options.h"
#include "runtime/prepared_model.h"
#include "scan/probe_eval.h"
#include "scan/sensitivity_shard.h"
#include "ptqkit/error.h"
#include "quant/formats/formats.h"
#include "quant/rewrite/model_placement.h"

namespace ptqkit {
namespace {

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ",") + i;
  return out;
}

}  // namespace

shard::CalibrationPart Calibrate(const QuantizeOptions& o, const shard::ShardSpec& shard,
                                 const SensitivityOptions* for_scan) {
  if (o.onnx_path.empty()) throw Error("--onnx_path is required");
  const QuantFormat& format = FindFormat(o.quantize_mode, "--quantize_mode");
  if (format.placement.weight_only) {
    throw Error(fmt::format("calibrate --quantize_mode '{}': tables are for {} (int4's awq search keeps "
                            "per-block Gram matrices, not a calibration table)",
                            o.quantize_mode, FormatNames(true)));
  }
  const std::string method_name = o.calibration_method.empty() ? "mse" : o.calibration_method;
  const calib::Method method = calib::ParseMethod(method_name);
  for (const auto& ep : o.calibration_eps) CheckExecutionProviderName(ep);
  if (for_scan && for_scan->granularity != "op_type" && for_scan->granularity != "node") {
    throw Error(fmt::format("unknown --granularity '{}' (expected op_type or node)", for_scan->granularity));
  }

  PreparedModel prepared = LoadPreparedModel(o.onnx_path);
  // The opset quantize runs at (FP8: 21), so the same tensors are observed.
  onnxio::UpgradeOpset(&prepared.proto, format.min_opset);
  ApplyModelOptions(o, format.min_opset, &prepared);
  const std::vector<std::string> tensors = for_scan ? ScanCalibrationTensors(prepared.proto, *for_scan)
                                                    : ModelPlacement(&prepared.proto, PlacementFor(o)).ActivationTensors();
  const std::string purpose =
      for_scan ? fmt::format("sensitivity scan: granularity={} op_types_scope=[{}]", for_scan->granularity,
                             Join(for_scan->op_types_scope))
               : fmt::format("quantize plan: op_types_to_quantize=[{}] op_types_to_exclude=[{}] nodes_to_quantize=[{}] "
                             "nodes_to_exclude=[{}]",
                             Join(o.op_types_to_quantize), Join(o.op_types_to_exclude), Join(o.nodes_to_quantize),
                             Join(o.nodes_to_exclude));
  DataRequest data_request = CalibrationRequest(o);
  // The batches a scan calibrates in (sensitivity_scan.cc), so that ONNX Runtime computes the very
  // same activations (statistics do not depend on batching, kernels may in the last bit).
  if (for_scan && HasDynamicBatch(prepared) && data_request.batch_size == 0 && data_request.shapes.empty()) {
    data_request.batch_size = kEvalBatchForDynamicModels;
  }
  CalibrationData data = OpenCalibrationData(prepared, data_request);
  const std::string data_digest = DataDigest(data.set);  // of every sample, before any window
  // quantize calibrates on all but the samples its loss report holds out (--eval_samples); a table
  // for quantize leaves out the same ones. A scan calibrates on every sample.
  if (!for_scan) UseCalibrationSamples(&data, SplitForEvaluation(data, o.eval_samples));

  CaptureRequest request;
  request.tensors = tensors;
  request.histograms = method != calib::Method::kMax;
  request.batch_size = data.batch_size;
  request.num_batches = data.num_batches;
  request.sliced = true;
  std::tie(request.first_batch, request.end_batch) = shard::ContiguousSlice(data.num_batches, shard);
  request.progress = o.progress;
  CaptureResult captured = CaptureStatistics(prepared.proto, data.set, request, Runtime(o));

  shard::CalibrationPart part;
  part.shard = shard;
  part.num_samples = captured.num_samples;
  part.table = std::move(captured.table);
  // Everything the numbers depend on; the slice itself is not part of it.
  part.fingerprint = {
      {"ptqkit_version", PTQKIT_VERSION},
      {"model", ModelDigest(o.onnx_path, prepared.proto)},
      {"quantize_mode", o.quantize_mode},
      {"opset", std::to_string(onnxio::DefaultOpset(prepared.proto))},
      {"data", data_digest},
      {"data_source", data.synthetic ? fmt::format("synthetic (seed {})", o.synthetic_seed) : "real"},
      {"data_samples", std::to_string(data.set.total_samples())},
      {"calibration_samples", std::to_string(std::min(data.set.num_samples(), data.num_batches * data.batch_size))},
      {"batch_size", std::to_string(data.batch_size)},
      {"histograms", request.histograms ? "yes" : "no (calibration_method max)"},
      {"tensors", purpose},
      {"execution_providers", Join(captured.providers)},
  };
  if (shard.count == 1) part.table.source = part.fingerprint;
  return part;
}

}  // namespace ptqkit
