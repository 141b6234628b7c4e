#include "pipeline/prepared_model.h"

#include <fmt/format.h>

#include "base/log.h"
#include "onnx/model_io.h"
#include "onnx/model_prep.h"
#include "onnx/onnx_library.h"
#include "pipeline/model_inputs.h"
#include "ptqkit/error.h"

namespace ptqkit {

PreparedModel LoadPreparedModel(const std::string& path) {
  PreparedModel m;
  m.proto = onnxio::LoadModel(path);
  onnxio::CheckModel(m.proto, path);
  onnxio::AssignNodeNames(m.proto.mutable_graph());
  m.original_opset = onnxio::UpgradeOpset(&m.proto, 13);
  if (m.original_opset < 13) log::Info("upgraded the model from opset {} to 13", m.original_opset);
  m.inputs = ModelInputSpecs(m.proto.graph());
  return m;
}

DataRequest CalibrationRequest(const QuantizeOptions& o) {
  return {o.calibration_data_path, o.calibration_tensors ? &*o.calibration_tensors : nullptr,
          o.num_synthetic_samples, o.synthetic_seed, o.calibration_shapes, o.calibration_batch_size, o.calibration_batch_axis};
}

RuntimeOptions Runtime(const QuantizeOptions& o) {
  return {o.calibration_eps, o.trt_plugins, o.intra_op_num_threads};
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
