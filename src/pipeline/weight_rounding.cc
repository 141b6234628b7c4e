#include "pipeline/weight_rounding.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <set>

#include "base/log.h"
#include "onnx/op_traits.h"
#include "onnx/session_model.h"
#include "quant/corrections/bias_correction.h"
#include "quant/corrections/hessian_rounding.h"
#include "quant/formats/input_gram.h"

namespace ptqkit {
namespace {

// One quantized weight and what its rows multiply.
struct Target {
  std::string weight;
  onnx::TensorProto* tensor = nullptr;
  int node = -1;
  std::string activation;
  std::string gram_key;     // targets with the same key share one InputGram (Q, K, V of one input)
  int64_t rows = 0, k = 0;  // output channels x what each one sums over
  bool transposed = false;  // stored [K, N] (MatMul, Gemm transB=0): a row is a column
  bool per_tensor = false;
  bool conv = false;
  ConvGeometry geometry;
};

std::string WhyNotTarget(const GraphIndex& index, const QuantizedTensor& q,
                         const std::map<std::string, onnx::TensorProto*>& initializers, Target* t) {
  if (q.uses.size() != 1 || index.Consumers(q.tensor).size() != 1) return "more than one node reads it";
  const TensorUse use = q.uses.front();
  const onnx::NodeProto& n = index.node(use.node);
  const OpTraits& traits = TraitsOf(n);
  if (use.input != traits.weight_input || traits.weight_layout == WeightLayoutKind::kConvTranspose) {
    return "only Conv, MatMul and Gemm weights are rounded";
  }
  auto it = initializers.find(q.tensor);
  if (it == initializers.end()) return "it is not an initializer or Constant of the main graph";
  onnx::TensorProto* w = it->second;
  if (w->data_type() != onnx::TensorProto::FLOAT) return "it is not float32";
  if (w->data_location() == onnx::TensorProto::EXTERNAL) return "its values are in external data";
  if (index.IsConstant(n.input(0))) return "its input is a constant";
  const std::vector<int64_t> shape = TensorShape(*w);
  t->weight = q.tensor;
  t->tensor = w;
  t->node = use.node;
  t->activation = n.input(0);
  t->per_tensor = q.axis < 0;
  if (traits.weight_layout == WeightLayoutKind::kConv) {
    std::string why;
    if (!MakeConvGeometry(n, shape, &t->geometry, &why)) return why;
    if (q.axis > 0) return "its scales are not per output channel";
    if (t->per_tensor && t->geometry.group > 1) return "a grouped Conv with one scale";
    t->conv = true;
    t->rows = shape[0];
    t->k = shape[1] * shape[2] * (shape.size() == 4 ? shape[3] : 1);
    t->gram_key = "conv " + n.name();
    return "";
  }
  if (shape.size() != 2) return "its weight is not a matrix";
  const WeightLayout layout = WeightLayoutOf(n, shape);
  if (layout.transposed_input) return "Gemm with transA";
  const bool rows_first = layout.out_axis == 0;  // [N, K]
  if (q.axis >= 0 && q.axis != layout.out_axis) return "its scales are not per output channel";
  t->transposed = !rows_first;
  t->rows = rows_first ? shape[0] : shape[1];
  t->k = rows_first ? shape[1] : shape[0];
  t->gram_key = fmt::format("rows {} {}", t->activation, t->k);
  return "";
}

// The Gram matrices of `targets`' inputs over the calibration samples: one forward pass.
std::map<std::string, std::unique_ptr<InputGram>> CollectGrams(const onnx::ModelProto& model, const GraphIndex& index,
                                                               const std::vector<const Target*>& targets,
                                                               const CalibrationData& data,
                                                               const RuntimeOptions& runtime,
                                                               std::set<std::string>* unusable) {
  std::map<std::string, std::unique_ptr<InputGram>> grams;
  std::map<std::string, std::vector<std::string>> keys_of;  // activation -> gram keys
  for (const Target* t : targets) {
    if (!grams.count(t->gram_key)) {
      grams[t->gram_key] = t->conv ? std::make_unique<InputGram>(t->geometry, t->k) : std::make_unique<InputGram>(t->k);
      keys_of[t->activation].push_back(t->gram_key);
    }
  }
  std::vector<std::string> outputs, from_inputs;
  for (const auto& [activation, keys] : keys_of) {
    (index.IsGraphInput(activation) ? from_inputs : outputs).push_back(activation);
  }
  const auto add = [&](const std::string& name, DataType dtype, const std::vector<int64_t>& shape, const void* x) {
    for (const auto& key : keys_of.at(name)) {
      if (unusable->count(key)) continue;
      if (dtype != DataType::kFloat || !grams.at(key)->Add(static_cast<const float*>(x), shape)) unusable->insert(key);
    }
  };
  std::unique_ptr<InferenceSession> session;
  if (!outputs.empty()) session = std::make_unique<InferenceSession>(onnxio::MakeSessionModel(model, outputs), runtime);
  for (int64_t b = 0; b < data.num_batches; ++b) {
    const Batch batch = data.set.ReadBatch(b, data.batch_size);
    for (const auto& name : from_inputs) {
      auto it = batch.find(name);
      if (it == batch.end()) continue;
      add(name, it->second.dtype, it->second.shape, it->second.bytes.data());
    }
    if (session) session->Run(batch, outputs, [&](const OutputView& v) { add(v.name, v.dtype, v.shape, v.data); });
  }
  return grams;
}

// rows x K, one output channel per row.
std::vector<float> RowsOf(const Target& t) {
  const std::vector<float> w = TensorToFloats(*t.tensor);
  if (!t.transposed) return w;
  std::vector<float> rows(w.size());
  for (int64_t kk = 0; kk < t.k; ++kk) {
    for (int64_t o = 0; o < t.rows; ++o) rows[o * t.k + kk] = w[kk * t.rows + o];
  }
  return rows;
}

void WriteRows(const Target& t, const std::vector<float>& rows) {
  std::vector<float> w(rows);
  if (t.transposed) {
    for (int64_t kk = 0; kk < t.k; ++kk) {
      for (int64_t o = 0; o < t.rows; ++o) w[kk * t.rows + o] = rows[o * t.k + kk];
    }
  }
  t.tensor->clear_float_data();
  t.tensor->set_raw_data(std::string(reinterpret_cast<const char*>(w.data()), w.size() * sizeof(float)));
}

struct TargetOutcome {
  bool rounded = false;
  std::string why_not;
  double error_ratio = 1.0;
  bool bias_corrected = false;
};

// The Conv's bias as floats (zeros when it has none); false when it is not a FLOAT constant of one
// value per output channel (then no shift can be absorbed).
bool ConvBias(const GraphIndex& index, const Target& t, std::vector<float>* bias) {
  const onnx::NodeProto& conv = index.node(t.node);
  bias->assign(static_cast<size_t>(t.rows), 0.0f);
  if (conv.input_size() <= 2 || conv.input(2).empty()) return true;
  const onnx::TensorProto* b = index.Constant(conv.input(2));
  if (b == nullptr || b->data_type() != onnx::TensorProto::FLOAT) return false;
  *bias = TensorToFloats(*b);
  return static_cast<int64_t>(bias->size()) == t.rows;
}

// Upper triangle of sum (x - mean)(x - mean)^T from the raw Gram: the error left once the bias has
// taken the mean shift away is d^T C d, not d^T G d. Without this, inputs with a large mean (every
// Conv after a Relu) spend the search on the mean direction, which the bias fixes for free, and the
// rounding comes out worse than nearest once the bias is corrected (measured on a depthwise block).
std::vector<double> CenteredGram(const InputGram& gram, int64_t group) {
  const int64_t k = gram.k();
  const double n = static_cast<double>(gram.gram(group).rows());
  const std::vector<double> mean = gram.Mean(group);
  const double* g = gram.gram(group).Block(0);
  std::vector<double> c(static_cast<size_t>(k * k), 0.0);
  for (int64_t i = 0; i < k; ++i) {
    for (int64_t j = i; j < k; ++j) c[i * k + j] = g[i * k + j] - n * mean[i] * mean[j];
    c[i * k + i] = std::max(0.0, c[i * k + i]);  // cancellation must not make a variance negative
  }
  return c;
}

TargetOutcome RoundTarget(onnx::GraphProto* graph, const GraphIndex& index, const Target& t, const InputGram& gram,
                          std::map<std::string, std::vector<InverseHessianFactor>>* factors,
                          const WeightRoundingSettings& settings) {
  TargetOutcome out;
  const QuantFormat& format = *settings.rewrite->format;
  const float qmax = settings.rewrite->reduce_range && format.reduced_range_qmax > 0 ? format.reduced_range_qmax
                                                                                      : format.qmax;
  std::vector<float> bias;
  const bool shift_bias = t.conv && settings.correct_conv_biases && ConvBias(index, t, &bias);
  std::vector<InverseHessianFactor>& f = (*factors)[t.gram_key + (shift_bias ? " centered" : "")];
  if (f.empty()) {
    for (int64_t g = 0; g < gram.groups(); ++g) {
      f.push_back(shift_bias ? FactorInverseHessian(CenteredGram(gram, g).data(), t.k)
                             : FactorInverseHessian(gram.gram(g).Block(0), t.k));
    }
  }
  const std::vector<float> original = RowsOf(t);
  std::vector<float> rows = original;
  const int64_t per_group = t.rows / gram.groups();
  double nearest = 0.0, kept = 0.0;
  for (int64_t g = 0; g < gram.groups(); ++g) {
    std::vector<float> part(rows.begin() + g * per_group * t.k, rows.begin() + (g + 1) * per_group * t.k);
    const HessianRoundingResult r =
        RoundWithHessian(&part, per_group, f[g], format, qmax, t.per_tensor, settings.threads);
    nearest += r.nearest_error;
    kept += r.rounded ? r.rounded_error : r.nearest_error;
    if (r.rounded) {
      std::copy(part.begin(), part.end(), rows.begin() + g * per_group * t.k);
      out.rounded = true;
    } else if (gram.groups() == 1) {
      out.why_not = r.why_not;
    }
  }
  if (!out.rounded) {
    if (out.why_not.empty()) out.why_not = "round-to-nearest already has the smaller modelled error";
    return out;
  }
  out.error_ratio = nearest > 0.0 ? kept / nearest : 1.0;
  WriteRows(t, rows);
  if (!shift_bias) return out;
  // The mean shift of each output channel the new codes make, relative to the float weight.
  for (int64_t g = 0; g < gram.groups(); ++g) {
    const std::vector<double> mean = gram.Mean(g);
    for (int64_t o = g * per_group; o < (g + 1) * per_group; ++o) {
      double shift = 0.0;
      for (int64_t kk = 0; kk < t.k; ++kk) {
        shift += (static_cast<double>(rows[o * t.k + kk]) - original[o * t.k + kk]) * mean[kk];
      }
      bias[o] = static_cast<float>(bias[o] - shift);
    }
  }
  SetConvBias(graph, index, t.node, bias);
  out.bias_corrected = true;
  return out;
}

}  // namespace

void RoundWeightsWithHessian(onnx::ModelProto* model, const ModelPlacement& plan, const CalibrationData& data,
                             const RuntimeOptions& runtime, const WeightRoundingSettings& settings,
                             WeightRoundingReport* report) {
  const auto start = std::chrono::steady_clock::now();
  report->method = "gptq";
  const ScopePlacement& main = plan.scopes().front();
  onnx::GraphProto* graph = main.scope.graph;
  std::map<std::string, onnx::TensorProto*> initializers;
  for (auto& t : *graph->mutable_initializer()) initializers[t.name()] = &t;
  for (auto& n : *graph->mutable_node()) {  // Paddle and TF exports keep weights in Constant nodes
    if (!HasRole(n, OpRole::kConstant) || n.output_size() != 1) continue;
    for (auto& a : *n.mutable_attribute()) {
      if (a.name() == "value" && a.has_t()) initializers[n.output(0)] = a.mutable_t();
    }
  }
  std::vector<Target> targets;
  for (const auto& q : main.plan.tensors) {
    if (!q.is_weight) continue;
    ++report->considered;
    Target t;
    const std::string why = WhyNotTarget(*main.index, q, initializers, &t);
    if (why.empty()) {
      targets.push_back(std::move(t));
    } else {
      report->not_rounded.emplace_back(q.tensor, why);
    }
  }
  double ratio_sum = static_cast<double>(report->not_rounded.size());  // 1 each
  // Passes of targets whose Gram matrices fit the cap together (at least one target each).
  size_t next = 0;
  while (next < targets.size()) {
    std::vector<const Target*> pass;
    std::set<std::string> keys;
    double bytes = 0.0;
    for (; next < targets.size(); ++next) {
      const Target& t = targets[next];
      const double b = keys.count(t.gram_key) ? 0.0 : (t.conv ? t.geometry.group : 1) * double(t.k) * double(t.k) * 8.0;
      if (!pass.empty() && bytes + b > settings.gram_bytes_per_pass) break;
      bytes += b;
      keys.insert(t.gram_key);
      pass.push_back(&t);
    }
    std::set<std::string> unusable;
    const auto grams = CollectGrams(*model, *main.index, pass, data, runtime, &unusable);
    ++report->forward_passes;
    std::map<std::string, std::vector<InverseHessianFactor>> factors;
    for (const Target* t : pass) {
      if (unusable.count(t->gram_key)) {
        report->not_rounded.emplace_back(t->weight, "its input is not a float32 tensor of the expected shape");
        ratio_sum += 1.0;
        continue;
      }
      const TargetOutcome out = RoundTarget(graph, *main.index, *t, *grams.at(t->gram_key), &factors, settings);
      ratio_sum += out.error_ratio;
      if (out.rounded) {
        ++report->rounded;
      } else {
        report->not_rounded.emplace_back(t->weight, out.why_not);
      }
      report->conv_biases_corrected += out.bias_corrected;
    }
  }
  report->mean_error_ratio = report->considered > 0 ? ratio_sum / report->considered : 1.0;
  report->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  log::Info("weight rounding (gptq): {} of {} weight(s) rounded, modelled output error {:.3f}x round-to-nearest's, "
            "{} forward pass(es), {:.1f} s",
            report->rounded, report->considered, report->mean_error_ratio, report->forward_passes, report->seconds);
}

}  // namespace ptqkit
