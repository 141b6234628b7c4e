#include "accuracy/output_agreement.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "onnx/float16.h"
#include "onnx/session_model.h"
#include "ptqkit/error.h"
#include "sensitivity/padding_mask.h"

namespace ptqkit::accuracy {
namespace {

bool IsFloat(DataType t) { return t == DataType::kFloat || t == DataType::kFloat16 || t == DataType::kBFloat16; }

std::vector<double> AsDoubles(const HostTensor& t) {
  const int64_t n = t.NumElements();
  std::vector<double> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    switch (t.dtype) {
      case DataType::kFloat: out[i] = t.Data<float>()[i]; break;
      case DataType::kFloat16: out[i] = HalfToFloat(t.Data<uint16_t>()[i]); break;
      case DataType::kBFloat16: {
        const uint32_t bits = static_cast<uint32_t>(t.Data<uint16_t>()[i]) << 16;
        float f;
        std::memcpy(&f, &bits, sizeof f);
        out[i] = f;
        break;
      }
      default: out[i] = 0.0;
    }
  }
  return out;
}

// The values as float32: the tensor's own buffer when it is float32 (no copy), else converted
// into `storage`.
const float* FloatValues(const HostTensor& t, std::vector<float>* storage) {
  if (t.dtype == DataType::kFloat) return t.Data<float>();
  const std::vector<double> d = AsDoubles(t);
  storage->assign(d.begin(), d.end());
  return storage->data();
}

// Samples of one output in one batch: rows of axis 0 when it has the batch's sample count there,
// else one sample.
int64_t SamplesIn(const HostTensor& t, int64_t batch_rows) {
  return !t.shape.empty() && t.shape[0] == batch_rows && batch_rows > 0 ? batch_rows : 1;
}

double Cosine(const double* a, const double* b, size_t n) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < n; ++i) {
    ab += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  if (aa == 0 && bb == 0) return 1.0;
  if (aa == 0 || bb == 0) return 0.0;
  return ab / std::sqrt(aa * bb);
}

size_t ArgMax(const double* v, size_t n) { return static_cast<size_t>(std::max_element(v, v + n) - v); }

bool HasTop1(const HostTensor& t) { return IsFloat(t.dtype) && (t.shape.size() == 2 || t.shape.size() == 3) && t.shape.back() >= 2; }

void CheckSameShape(const std::string& name, const HostTensor& r, const HostTensor& q) {
  if (r.shape != q.shape) {
    throw Error(fmt::format("output '{}': the quantized model gives shape {} where the FP32 model gives {}", name,
                            ShapeToString(q.shape), ShapeToString(r.shape)),
                Error::Kind::kRuntime);
  }
}

}  // namespace

BatchOutputs RunOutputs(const onnx::ModelProto& model, const CalibrationSet& set, const SampleRange& range,
                        const RuntimeOptions& runtime) {
  return RunOutputs(onnxio::MakeSessionModel(model), model, set, range, runtime);
}

BatchOutputs RunOutputs(const onnxio::SessionModel& session_model, const onnx::ModelProto& model,
                        const CalibrationSet& set, const SampleRange& range, const RuntimeOptions& runtime) {
  std::vector<std::string> names;
  for (const auto& o : model.graph().output()) names.push_back(o.name());
  InferenceSession session(session_model, runtime);
  BatchOutputs out;
  for (int64_t b = range.first; b < range.first + range.count; ++b) {
    out.rows.push_back(std::min(range.batch_size, set.num_samples() - b * range.batch_size));
    const auto batch = set.ReadBatch(b, range.batch_size);
    out.values.push_back(session.Run(batch, names));
    if (!range.mask_input.empty()) {
      const sensitivity::PaddingMask mask = sensitivity::PaddingMask::Of(batch, range.mask_input);
      for (HostTensor& t : out.values.back()) mask.Apply(&t);
    }
  }
  return out;
}

std::vector<OutputLoss> CompareOutputs(const std::vector<std::string>& names, const BatchOutputs& reference,
                                       const BatchOutputs& quantized) {
  std::vector<OutputLoss> losses(names.size());
  for (size_t k = 0; k < names.size(); ++k) {
    OutputLoss& loss = losses[k];
    loss.output = names[k];
    double cos_sum = 0, err2 = 0, ref2 = 0;
    int64_t top1_same = 0, top1_rows = 0, exact = 0;
    bool top1 = false;
    for (size_t b = 0; b < reference.values.size(); ++b) {
      const HostTensor& r = reference.values[b][k];
      const HostTensor& q = quantized.values[b][k];
      CheckSameShape(names[k], r, q);
      const int64_t rows = SamplesIn(r, reference.rows[b]);
      loss.is_float = IsFloat(r.dtype);
      loss.rank = static_cast<int64_t>(r.shape.size());
      if (!loss.is_float) {
        const size_t row_bytes = r.bytes.size() / static_cast<size_t>(rows);
        for (int64_t s = 0; s < rows; ++s) {
          exact += std::equal(r.bytes.begin() + s * row_bytes, r.bytes.begin() + (s + 1) * row_bytes, q.bytes.begin() + s * row_bytes);
        }
        loss.samples += rows;
        continue;
      }
      const std::vector<double> rv = AsDoubles(r), qv = AsDoubles(q);
      const size_t per = rv.size() / static_cast<size_t>(rows);
      for (double v : qv) loss.non_finite += !std::isfinite(v);
      for (size_t i = 0; i < rv.size(); ++i) {
        const double d = qv[i] - rv[i];
        err2 += d * d;
        ref2 += rv[i] * rv[i];
        loss.max_abs_diff = std::max(loss.max_abs_diff, std::abs(d));
      }
      for (int64_t s = 0; s < rows; ++s) {
        const double c = Cosine(rv.data() + s * per, qv.data() + s * per, per);
        cos_sum += c;
        loss.cosine_min = std::min(loss.cosine_min, c);
      }
      if (HasTop1(r)) {
        top1 = true;
        const size_t classes = static_cast<size_t>(r.shape.back());
        for (size_t row = 0; row + classes <= rv.size(); row += classes) {
          top1_same += ArgMax(rv.data() + row, classes) == ArgMax(qv.data() + row, classes);
          ++top1_rows;
        }
      }
      loss.samples += rows;
    }
    if (loss.is_float) {
      loss.cosine_mean = loss.samples > 0 ? cos_sum / static_cast<double>(loss.samples) : 1.0;
      loss.relative_rmse = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
      if (top1) loss.top1_agreement = top1_rows > 0 ? static_cast<double>(top1_same) / static_cast<double>(top1_rows) : 1.0;
    } else {
      loss.cosine_mean = loss.cosine_min = 1.0;
      loss.exact_match = loss.samples > 0 ? static_cast<double>(exact) / static_cast<double>(loss.samples) : 1.0;
    }
  }
  return losses;
}

BudgetMetric ParseBudgetMetric(const std::string& name) {
  if (name == "kl_div") return BudgetMetric::kKlDiv;
  if (name == "mse") return BudgetMetric::kMse;
  if (name == "cos") return BudgetMetric::kCos;
  if (name == "top1") return BudgetMetric::kTop1;
  throw Error(fmt::format("unknown accuracy budget metric '{}' (expected kl_div, mse, cos or top1)", name));
}

std::string BudgetMetricName(BudgetMetric metric) {
  switch (metric) {
    case BudgetMetric::kKlDiv: return "kl_div";
    case BudgetMetric::kMse: return "mse";
    case BudgetMetric::kCos: return "cos";
    case BudgetMetric::kTop1: return "top1";
  }
  return "?";
}

double Divergence(BudgetMetric metric, const BatchOutputs& reference, const BatchOutputs& quantized) {
  if (reference.values.empty()) return 0.0;
  const size_t outputs = reference.values[0].size();
  if (metric == BudgetMetric::kTop1) {
    std::vector<std::string> names(outputs);
    double worst = 0.0;
    for (const OutputLoss& l : CompareOutputs(names, reference, quantized)) {
      if (l.non_finite > 0) return std::numeric_limits<double>::infinity();
      const double agree = l.top1_agreement ? *l.top1_agreement : l.exact_match ? *l.exact_match : 1.0;
      worst = std::max(worst, 1.0 - agree);
    }
    return worst;
  }
  const sensitivity::Metric m = metric == BudgetMetric::kKlDiv ? sensitivity::Metric::kKlDiv
                                : metric == BudgetMetric::kMse ? sensitivity::Metric::kMse
                                                               : sensitivity::Metric::kCos;
  double total = 0.0;
  for (size_t k = 0; k < outputs; ++k) {
    double sum = 0.0;
    int64_t samples = 0;
    for (size_t b = 0; b < reference.values.size(); ++b) {
      const HostTensor& r = reference.values[b][k];
      const HostTensor& q = quantized.values[b][k];
      if (!IsFloat(r.dtype)) continue;
      CheckSameShape(fmt::format("#{}", k), r, q);
      std::vector<float> r_storage, q_storage;
      const float* rf = FloatValues(r, &r_storage);
      const float* qf = FloatValues(q, &q_storage);
      const int64_t rows = SamplesIn(r, reference.rows[b]);
      const size_t per = static_cast<size_t>(r.NumElements()) / static_cast<size_t>(rows);
      for (int64_t s = 0; s < rows; ++s) sum += sensitivity::CompareSample(m, rf + s * per, qf + s * per, per);
      samples += rows;
    }
    if (samples > 0) total += sum / static_cast<double>(samples);
  }
  return std::isfinite(total) ? total : std::numeric_limits<double>::infinity();
}

int64_t Top1Rows(const BatchOutputs& outputs) {
  int64_t fewest = 0;
  const size_t n = outputs.values.empty() ? 0 : outputs.values.front().size();
  for (size_t k = 0; k < n; ++k) {
    int64_t rows = 0;
    bool has = false;
    for (const auto& batch : outputs.values) {
      const HostTensor& t = batch[k];
      if (!HasTop1(t)) continue;
      has = true;
      rows += t.NumElements() / t.shape.back();  // as CompareOutputs counts them: one per argmax
    }
    if (has && (fewest == 0 || rows < fewest)) fewest = rows;
  }
  return fewest;
}

}  // namespace ptqkit::accuracy
