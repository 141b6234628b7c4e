#include "runtime/prepared_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "base/log.h"
#include "onnx/graph_cycles.h"
#include "onnx/model_io.h"
#include "onnx/model_prep.h"
#include "onnx/onnx_library.h"
#include "runtime/model_inputs.h"
#include "ptqkit/error.h"

namespace ptqkit {
namespace {

// The newest IR version the bundled ONNX Runtime (1.30) reads. onnx 1.23 writes IR 14 by default
// (its helper.make_model), and ONNX Runtime refuses such a file outright, although IR 13 covers
// every operator set up to 27 (onnx.helper.VERSION_TABLE). A model of those opsets is read as IR
// 13; one that needs something newer fails later with ONNX Runtime's own message.
constexpr int64_t kRuntimeMaxIrVersion = 13;
constexpr int64_t kMaxOpsetOfRuntimeIr = 27;

void LowerIrVersionForRuntime(onnx::ModelProto* model) {
  if (model->ir_version() <= kRuntimeMaxIrVersion) return;
  for (const auto& o : model->opset_import()) {
    if ((o.domain().empty() || o.domain() == "ai.onnx") && o.version() > kMaxOpsetOfRuntimeIr) return;
  }
  log::Info("the model declares IR version {}; read as {}, the newest the bundled ONNX Runtime takes (its opsets "
            "need nothing newer)",
            model->ir_version(), kRuntimeMaxIrVersion);
  model->set_ir_version(kRuntimeMaxIrVersion);
}

// IR 3 requires every initializer to be a graph input too; exporters that wrote IR 3 with
// initializers alone (as IR >= 4 allows) mean an IR 4 model, and ONNX's checker and version
// converter refuse the model as written ("w in initializer but not in graph input"). It is read as
// IR 4, which changes nothing else.
void RaiseIrVersionForInitializers(onnx::ModelProto* model, const std::string& path) {
  if (model->ir_version() >= 4) return;
  std::set<std::string> inputs;
  for (const auto& v : model->graph().input()) inputs.insert(v.name());
  for (const auto& t : model->graph().initializer()) {
    if (inputs.count(t.name())) continue;
    log::Info("model '{}' declares IR version {} but initializer '{}' is not a graph input (allowed from IR 4): "
              "read as IR 4",
              path, model->ir_version(), t.name());
    model->set_ir_version(4);
    return;
  }
}

}  // namespace

PreparedModel LoadPreparedModel(const std::string& path, IoGuard guard) {
  PreparedModel m;
  m.proto = onnxio::LoadModel(path, &m.external_files);
  for (const auto& file : m.external_files) guard.Input(file, "the model's external data");
  guard.Check();
  onnxio::CheckModel(m.proto, path);
  RaiseIrVersionForInitializers(&m.proto, path);
  LowerIrVersionForRuntime(&m.proto);
  onnxio::AssignNodeNames(m.proto.mutable_graph());
  onnxio::CheckAcyclic(m.proto.graph(), path);
  m.original_opset = onnxio::UpgradeOpset(&m.proto, 13);
  if (m.original_opset < 13) log::Info("upgraded the model from opset {} to 13", m.original_opset);
  m.inputs = ModelInputSpecs(m.proto.graph());
  return m;
}

std::string QuantizeOutputPath(const QuantizeOptions& o) {
  if (!o.output_path.empty()) return o.output_path;
  const std::filesystem::path in(o.onnx_path);
  return (in.parent_path() / (in.stem().string() + ".quant.onnx")).string();
}

IoGuard QuantizeFiles(const QuantizeOptions& o, const std::string& output) {
  IoGuard guard;
  guard.Input(o.onnx_path, "--onnx_path");
  guard.InputFolderFiles(o.calibration_data_path, "--calibration_data_path");
  guard.Input(o.calibration_cache, "--calibration_cache");
  guard.Input(o.calibration_cache_path, "--calibration_cache_path");
  guard.Output(output, "--output_path");
  // Written with --use_external_data_format, and automatically for models over 2 GiB.
  guard.Output(output + ".data", "the output's external data");
  guard.Output(o.save_calibration_cache, "--save_calibration_cache");
  guard.Output(o.save_calibration_cache_path, "--save_calibration_cache_path");
  guard.Output(o.report_json, "--report_json");
  guard.Output(o.report_html, "--report_html");
  return guard;
}

DataRequest CalibrationRequest(const QuantizeOptions& o) {
  return {o.calibration_data_path, o.calibration_tensors ? &*o.calibration_tensors : nullptr,
          o.num_synthetic_samples, o.synthetic_seed, o.calibration_shapes, o.calibration_batch_size, o.calibration_batch_axis};
}

RuntimeOptions Runtime(const QuantizeOptions& o) {
  RuntimeOptions r;
  r.execution_providers = o.calibration_eps;
  r.trt_plugins = o.trt_plugins;
  r.intra_op_threads = o.intra_op_num_threads;
  for (size_t k = 0; k < o.input_shapes_profile.size() && k < o.calibration_eps.size(); ++k) {
    r.provider_options[o.calibration_eps[k]] = o.input_shapes_profile[k];
  }
  // Plugins run only in TensorRT: as in ModelOpt, giving them puts the trt provider first.
  if (!o.trt_plugins.empty() && std::find(r.execution_providers.begin(), r.execution_providers.end(), "trt") ==
                                    r.execution_providers.end()) {
    r.execution_providers.insert(r.execution_providers.begin(), "trt");
  }
  return r;
}

CalibrationData OpenCalibrationData(const PreparedModel& model, const DataRequest& request) {
  CalibrationData data{[&] {
    if (request.tensors) return CalibrationSet::FromTensors(*request.tensors);
    if (!request.path.empty()) return CalibrationSet::FromPath(request.path);
    return CalibrationSet::Synthetic(model.inputs, request.synthetic_samples, request.synthetic_seed, request.shapes);
  }(), false, 1, 0, false, {}};
  data.synthetic = !request.tensors && request.path.empty();
  if (data.synthetic) {
    log::Warn("no calibration data given: using {} seeded synthetic samples (float inputs ~ N(0,1)); results are "
              "directional only — pass --calibration_data_path for meaningful scales",
              request.synthetic_samples);
  }
  data.set.Validate(model.inputs, request.shapes, request.batch_axes);
  for (const auto& in : model.inputs) data.sample_axes[in.name] = data.set.sample_axis(in.name);
  data.batch_size = ChooseBatchSize(model.inputs, request.shapes, request.batch_size, data.sample_axes);
  data.num_batches = data.set.NumBatches(data.batch_size);
  bool fixed_batch = false;
  for (const auto& in : model.inputs) {
    const int64_t axis = data.sample_axes.at(in.name);
    fixed_batch |= axis >= 0 && axis < static_cast<int64_t>(in.shape.size()) && in.shape[axis] > 0;
  }
  data.fixed_batch = fixed_batch;
  const int64_t remainder = data.set.num_samples() % data.batch_size;
  if (fixed_batch && remainder != 0) {
    data.num_batches = data.set.num_samples() / data.batch_size;
    if (data.num_batches == 0) {
      throw Error(fmt::format("the model's fixed batch size is {} but the calibration data has only {} sample(s)",
                              data.batch_size, data.set.num_samples()));
    }
    log::Warn("the model's batch size is fixed to {}: the last {} calibration sample(s) are not used", data.batch_size,
              remainder);
  }
  return data;
}

}  // namespace ptqkit
