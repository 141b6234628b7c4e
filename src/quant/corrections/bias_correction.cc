#include "quant/corrections/bias_correction.h"

#include <fmt/format.h>

#include <set>

#include "onnx/fresh_name.h"
#include "onnx/op_traits.h"
#include "quant/formats/numerics.h"

namespace ptqkit {
namespace {

int64_t GroupOf(const onnx::NodeProto& n) {
  for (const auto& a : n.attribute()) {
    if (a.name() == "group") return a.i();
  }
  return 1;
}

// A Conv whose weight the plan quantizes per output channel.
struct CorrectableConv {
  int node = -1;
  std::string weight;
  const QuantFormat* format = nullptr;  // the weight's when not the run's (--mixed_precision)
};

std::vector<CorrectableConv> CorrectableConvs(const GraphIndex& index, const Placement& plan) {
  std::vector<CorrectableConv> convs;
  for (const auto& q : plan.tensors) {
    if (!q.is_weight || q.axis != 0) continue;
    for (const auto& u : q.uses) {
      const auto& n = index.node(u.node);
      if (TraitsOf(n).weight_layout == WeightLayoutKind::kConv && u.input == 1 && n.input_size() >= 2) {
        convs.push_back({u.node, q.tensor, q.format});
      }
    }
  }
  return convs;
}


void SetFloats(onnx::TensorProto* t, std::string name, const std::vector<float>& values) {  // name by value: may be t's
  t->Clear();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(static_cast<int64_t>(values.size()));
  t->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
}

}  // namespace

std::vector<std::string> ConvInputsToCorrect(const GraphIndex& index, const Placement& plan) {
  std::set<std::string> inputs;
  for (const auto& conv : CorrectableConvs(index, plan)) inputs.insert(index.node(conv.node).input(0));
  return {inputs.begin(), inputs.end()};
}

std::vector<float> FakeQuantizedWeight(const std::vector<float>& w, const std::vector<int64_t>& shape,
                                       const RewriteOptions& options, const std::string& name) {
  const QuantFormat& format = *options.format;
  const float qmax =
      options.reduce_range && format.reduced_range_qmax > 0 ? format.reduced_range_qmax : format.qmax;
  std::vector<float> scales;
  for (float a : AbsMaxPerChannel(w.data(), shape, 0)) scales.push_back(ScaleFromAmax(a, qmax, name, false));
  const size_t per_channel = scales.empty() ? 0 : w.size() / scales.size();
  std::vector<float> out(w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    const float s = scales[i / per_channel];
    out[i] = format.dequantize(format.quantize(w[i], s), s);  // the format's own reference numerics
  }
  return out;
}

std::vector<double> TapCoverage(const onnx::NodeProto& conv, const std::vector<int64_t>& kernel,
                                const std::vector<int64_t>& input_spatial) {
  const size_t dims = kernel.size();
  if (input_spatial.size() != dims || dims == 0) return {};
  std::vector<int64_t> pads(2 * dims, 0), strides(dims, 1), dilations(dims, 1);
  std::string auto_pad = "NOTSET";
  for (const auto& a : conv.attribute()) {
    if (a.name() == "pads" && a.ints_size() == static_cast<int>(2 * dims)) pads.assign(a.ints().begin(), a.ints().end());
    if (a.name() == "strides" && a.ints_size() == static_cast<int>(dims)) strides.assign(a.ints().begin(), a.ints().end());
    if (a.name() == "dilations" && a.ints_size() == static_cast<int>(dims)) {
      dilations.assign(a.ints().begin(), a.ints().end());
    }
    if (a.name() == "auto_pad") auto_pad = a.s();
  }
  // Per spatial dim: the fraction of output positions where tap t lands inside the input.
  std::vector<std::vector<double>> per_dim(dims);
  for (size_t d = 0; d < dims; ++d) {
    const int64_t in = input_spatial[d], k = kernel[d], s = strides[d], dil = dilations[d];
    if (in <= 0 || s <= 0 || dil <= 0) return {};
    int64_t begin = pads[d], end = pads[d + dims];
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const int64_t out = (in + s - 1) / s;
      const int64_t total = std::max<int64_t>(0, (out - 1) * s + dil * (k - 1) + 1 - in);
      begin = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    } else if (auto_pad == "VALID") {
      begin = end = 0;
    } else if (auto_pad != "NOTSET") {
      return {};
    }
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") end = 0;  // only begin matters below
    const int64_t out = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER"
                            ? (in + s - 1) / s
                            : (in + begin + end - dil * (k - 1) - 1) / s + 1;
    if (out <= 0) return {};
    for (int64_t t = 0; t < k; ++t) {
      int64_t inside = 0;
      for (int64_t i = 0; i < out; ++i) {
        const int64_t x = i * s - begin + t * dil;
        inside += x >= 0 && x < in;
      }
      per_dim[d].push_back(static_cast<double>(inside) / static_cast<double>(out));
    }
  }
  std::vector<double> coverage{1.0};
  for (size_t d = 0; d < dims; ++d) {
    std::vector<double> next;
    for (double c : coverage) {
      for (double f : per_dim[d]) next.push_back(c * f);
    }
    coverage = std::move(next);
  }
  return coverage;
}

std::vector<double> ConvOutputShift(const std::vector<float>& w, const std::vector<float>& w_quantized,
                                    const std::vector<int64_t>& shape, int64_t group,
                                    const std::vector<double>& input_means,
                                    const std::vector<double>& tap_coverage) {
  const int64_t out_channels = shape[0];
  const int64_t per_group_in = shape[1];
  int64_t taps = 1;
  for (size_t d = 2; d < shape.size(); ++d) taps *= shape[d];
  const int64_t per_group_out = out_channels / group;
  std::vector<double> shift(static_cast<size_t>(out_channels), 0.0);
  for (int64_t o = 0; o < out_channels; ++o) {
    const int64_t first_in = (o / per_group_out) * per_group_in;
    double s = 0.0;
    for (int64_t c = 0; c < per_group_in; ++c) {
      double d = 0.0;
      const size_t base = static_cast<size_t>((o * per_group_in + c) * taps);
      for (int64_t k = 0; k < taps; ++k) {
        const double coverage = tap_coverage.empty() ? 1.0 : tap_coverage[k];
        d += (static_cast<double>(w_quantized[base + k]) - w[base + k]) * coverage;
      }
      s += d * input_means[first_in + c];
    }
    shift[o] = s;
  }
  return shift;
}

void SetConvBias(onnx::GraphProto* graph, const GraphIndex& index, int node, const std::vector<float>& bias) {
  onnx::NodeProto* conv = graph->mutable_node(node);
  const bool has_bias = conv->input_size() > 2 && !conv->input(2).empty();
  // A bias initializer of this graph that only this Conv reads is overwritten in place; otherwise
  // (shared, a Constant node's output, an outer graph's tensor, no bias) the Conv gets a fresh one.
  onnx::TensorProto* own = nullptr;
  if (has_bias && index.Consumers(conv->input(2)).size() == 1 && !index.IsGraphInput(conv->input(2))) {
    for (auto& t : *graph->mutable_initializer()) {
      if (t.name() == conv->input(2)) own = &t;
    }
  }
  if (own != nullptr) {
    SetFloats(own, own->name(), bias);
  } else {
    const std::string name =
        onnxio::FreshTensorName(*graph, (has_bias ? conv->input(2) : conv->name() + "_bias") + "_corrected");
    SetFloats(graph->add_initializer(), name, bias);
    while (conv->input_size() < 3) conv->add_input("");
    conv->set_input(2, name);
  }
}

int CorrectConvBiases(onnx::GraphProto* graph, const GraphIndex& index, const Placement& plan,
                      const std::map<std::string, ConvInputStatistics>& inputs, const RewriteOptions& options) {
  int corrected = 0;
  // The corrected biases, applied after the loop: a bias read through `index` stays unchanged
  // while later Convs are computed.
  std::vector<std::pair<int, std::vector<float>>> new_biases;
  for (const auto& correctable : CorrectableConvs(index, plan)) {
    const int node = correctable.node;
    const std::string& weight = correctable.weight;
    RewriteOptions weight_options = options;
    if (correctable.format != nullptr) weight_options.format = correctable.format;
    const onnx::NodeProto& conv = index.node(node);
    auto stats = inputs.find(conv.input(0));
    const onnx::TensorProto* w = index.Constant(weight);
    if (stats == inputs.end() || w == nullptr) continue;
    const std::vector<double>& means = stats->second.mean;
    const std::vector<int64_t> shape = TensorShape(*w);
    const int64_t group = GroupOf(conv);
    if (shape.size() < 3 || group <= 0 || shape[0] % group != 0 ||
        static_cast<int64_t>(means.size()) != shape[1] * group) {
      continue;
    }
    std::vector<float> bias(static_cast<size_t>(shape[0]), 0.0f);
    if (conv.input_size() > 2 && !conv.input(2).empty()) {
      const onnx::TensorProto* b = index.Constant(conv.input(2));
      if (b == nullptr || b->data_type() != onnx::TensorProto::FLOAT) continue;
      bias = TensorToFloats(WeightValues(*b, options));
      if (bias.size() != static_cast<size_t>(shape[0])) continue;
    }
    const std::vector<float> values = TensorToFloats(WeightValues(*w, options));
    std::vector<double> coverage;
    if (stats->second.shape.size() == shape.size()) {
      coverage = TapCoverage(conv, std::vector<int64_t>(shape.begin() + 2, shape.end()),
                             std::vector<int64_t>(stats->second.shape.begin() + 2, stats->second.shape.end()));
    }
    const std::vector<double> shift =
        ConvOutputShift(values, FakeQuantizedWeight(values, shape, weight_options, weight), shape, group, means,
                        coverage);
    for (size_t o = 0; o < bias.size(); ++o) bias[o] = static_cast<float>(bias[o] - shift[o]);
    new_biases.emplace_back(node, std::move(bias));
  }
  for (auto& [node, bias] : new_biases) {
    SetConvBias(graph, index, node, bias);
    ++corrected;
  }
  return corrected;
}

}  // namespace ptqkit
