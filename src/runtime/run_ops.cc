#include "runtime/run_ops.h"

#include <onnxruntime_cxx_api.h>
#include <onnxruntime_lite_custom_op.h>

#include <algorithm>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "quant/formats/formats.h"
#include "quant/rewrite/weight_qdq_fold.h"

namespace ptqkit {
namespace {

// Below this many values a weight is done on the calling thread.
constexpr int64_t kThreadedAbove = 1 << 20;

// FakeQuantizeWeight(W float, scale float [C] or scalar) -> float like W; attributes axis and
// element_type. The values are the format's reference numerics (quant/formats/numerics.h), bit-exact with
// ONNX Runtime's QuantizeLinear -> DequantizeLinear.
struct FakeQuantizeWeightKernel {
  FakeQuantizeWeightKernel(const OrtApi*, const OrtKernelInfo* info) {
    Ort::ConstKernelInfo k(info);
    axis_ = k.GetAttribute<int64_t>("axis");
    const auto type = static_cast<int32_t>(k.GetAttribute<int64_t>("element_type"));
    format_ = ByteFormatOfType(type);
    if (!format_) ORT_CXX_API_THROW("FakeQuantizeWeight: no 8-bit format of element type " + std::to_string(type), ORT_INVALID_ARGUMENT);
  }

  void Compute(const Ort::Custom::Tensor<float>& w, const Ort::Custom::Tensor<float>& scale, Ort::Custom::Tensor<float>& out) {
    const std::vector<int64_t>& shape = w.Shape();
    const int64_t count = w.NumberOfElement();
    const auto channels = static_cast<int64_t>(std::max<int64_t>(1, scale.NumberOfElement()));
    int64_t inner = 1;
    if (channels > 1) {
      if (axis_ < 0 || axis_ >= static_cast<int64_t>(shape.size()) || shape[axis_] != channels) {
        ORT_CXX_API_THROW("FakeQuantizeWeight: the scales do not match the weight's axis", ORT_INVALID_ARGUMENT);
      }
      for (size_t d = static_cast<size_t>(axis_) + 1; d < shape.size(); ++d) inner *= shape[d];
    }
    const float* in = w.Data();
    float* result = out.Allocate(shape);
    const float* scales = scale.Data();
    // Each half starts at a multiple of channels * inner values, so its first value is channel 0's.
    const int64_t period = channels * inner;
    const auto run = [&](int64_t begin, int64_t end) {
      format_->fake_quantize(in + begin, result + begin, end - begin, scales, channels, inner);
    };
    const int64_t half = (count / period / 2) * period;
    if (count < kThreadedAbove || half == 0) {
      run(0, count);
      return;
    }
    // The weight's own pass is the only work at this point of a sequential run: split it in two.
    std::thread other(run, half, count);
    run(0, half);
    other.join();
  }

  int64_t axis_ = 0;
  const QuantFormat* format_ = nullptr;
};

}  // namespace

void AddRunOps(Ort::SessionOptions* options) {
  // ONNX Runtime keeps pointers to the domain and its operators: they live for the whole program.
  static Ort::CustomOpDomain* domain = [] {
    static std::unique_ptr<Ort::Custom::OrtLiteCustomOp> fake_quantize{
        Ort::Custom::CreateLiteCustomOp<FakeQuantizeWeightKernel>(kFakeQuantizeWeightOp, "CPUExecutionProvider")};
    auto* d = new Ort::CustomOpDomain(kRunOpsDomain);
    d->Add(fake_quantize.get());
    return d;
  }();
  options->Add(*domain);
}

}  // namespace ptqkit
