// GramCapture: what the weight-only modes measure on the calibration samples, in one streaming
// pass of ONNX Runtime: the block Gram matrices X^T X (and per-channel |x| sums) of each planned
// weight's activation input (awq_clip, awq_lite; quant/formats/blocked_weight_search.h BlockGram), and the
// absolute maximum of each dynamic-block activation (nvfp4's global scale, --quantize_activations).
// Memory: K x (block + 1) doubles per activation, whatever the number of samples.
// Not thread-safe.
#pragma once

#include <onnx/onnx_pb.h>

#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "onnx/graph_index.h"
#include "quant/formats/blocked_weight_search.h"
#include "quant/placement/placement.h"
#include "runtime/prepared_model.h"
#include "runtime/session.h"

namespace ptqkit {

class GramCapture {
 public:
  // `grams`: the planned weights' activations get Grams (awq_clip, awq_lite); dynamic-block
  // activations always get their absolute maximum (nvfp4's global scale). REQUIRES: `plan` is a
  // weight-only plan made from `index`, an index over model.graph(); `model` outlives the capture.
  GramCapture(const onnx::ModelProto& model, const GraphIndex& index, const Placement& plan, int64_t block_size,
              bool grams);

  // Runs the batches; returns the number of samples seen. Throws ptqkit::Error for an activation
  // that is not a float tensor or whose last dimension is not its weight's K.
  int64_t Run(const CalibrationData& data, const RuntimeOptions& runtime,
              const std::function<void(int64_t, int64_t)>& progress, std::vector<std::string>* providers);

  const std::map<std::string, BlockGram>& grams() const { return grams_; }
  const std::map<std::string, float>& amax() const { return amax_; }

 private:
  // Reads `tensor` from where it is: a constant now, a graph input from the batches, any other
  // tensor as an extra output of the run. Once per tensor.
  void Observe(const GraphIndex& index, const std::string& tensor);
  void AddConstant(const std::string& name, const onnx::TensorProto& c);
  // Rows = every element but the last axis, which must be K (MatMul A[..., K], Gemm A[M, K]).
  void Add(const std::string& name, DataType dtype, const std::vector<int64_t>& shape, const void* data, int64_t count);

  const onnx::ModelProto* model_ = nullptr;
  std::map<std::string, BlockGram> grams_;
  std::map<std::string, float> amax_;  // dynamic-block activations: largest finite |x| seen
  std::set<std::string> observed_;
  std::vector<std::pair<std::string, const onnx::TensorProto*>> constants_;
  std::vector<std::string> from_inputs_, from_outputs_;
  std::vector<float> scratch_;
};

}  // namespace ptqkit
