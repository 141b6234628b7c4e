#include "quant/corrections/activation_smoothing.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <numeric>
#include <set>

#include "onnx/fresh_name.h"
#include "onnx/op_traits.h"
#include "quant/placement/graph_patterns.h"

namespace ptqkit {
namespace {

bool IsFloat32(const onnx::TensorProto& t) { return t.data_type() == onnx::TensorProto::FLOAT; }

// The constant's values broadcast over K channels of the last axis: a scalar or [.., K] with
// every other dim 1.
bool PerChannelOrScalar(const onnx::TensorProto& c, int64_t k) {
  const int64_t n = ElementCount(c);
  if (n == 1) return true;
  if (n != k || c.dims_size() == 0 || c.dims(c.dims_size() - 1) != k) return false;
  return true;
}


onnx::TensorProto* OwnInitializer(onnx::GraphProto* graph, const std::string& name) {
  for (auto& t : *graph->mutable_initializer()) {
    if (t.name() == name) return &t;
  }
  return nullptr;
}

void SetFloats(onnx::TensorProto* t, const std::vector<int64_t>& dims, const std::vector<float>& values) {
  const std::string name = t->name();
  t->Clear();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (auto d : dims) t->add_dims(d);
  t->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
}

// Calls f(values) on `t`'s float values, edited in place when they are float32 in an aligned
// buffer (the usual case: no copy), else through a copy written back as raw data.
template <typename F>
void WithFloats(onnx::TensorProto* t, F f) {
  const size_t count = static_cast<size_t>(std::accumulate(t->dims().begin(), t->dims().end(), int64_t{1},
                                                           std::multiplies<int64_t>()));
  if (t->data_type() == onnx::TensorProto::FLOAT && t->external_data_size() == 0) {
    if (t->has_raw_data() && t->raw_data().size() == count * sizeof(float) &&
        reinterpret_cast<uintptr_t>(t->raw_data().data()) % alignof(float) == 0) {
      f(reinterpret_cast<float*>(t->mutable_raw_data()->data()));
      return;
    }
    if (!t->has_raw_data() && static_cast<size_t>(t->float_data_size()) == count) {
      f(t->mutable_float_data()->mutable_data());
      return;
    }
  }
  std::vector<float> values = TensorToFloats(*t);
  f(values.data());
  const std::vector<int64_t> dims(t->dims().begin(), t->dims().end());
  SetFloats(t, dims, values);
}

}  // namespace

std::vector<SmoothingSite> FindSmoothingSites(const GraphIndex& index, const Placement& plan,
                                              bool keep_gelu_constants) {
  std::set<int> quantized(plan.quantized_nodes.begin(), plan.quantized_nodes.end());
  std::set<std::string> candidates;
  for (int i : plan.quantized_nodes) {
    const auto& n = index.node(i);
    if (TraitsOf(n).weight_layout == WeightLayoutKind::kMatMul) candidates.insert(n.input(0));
  }
  std::vector<SmoothingSite> sites;
  for (const auto& x : candidates) {
    if (index.IsGraphOutput(x)) continue;
    const int p = index.Producer(x);
    if (p < 0) continue;
    const auto& mul = index.node(p);
    if (mul.op_type() != "Mul" || !mul.domain().empty() || mul.input_size() != 2) continue;
    if (keep_gelu_constants && IsExportedGeluTail(index, p)) continue;
    const int ci = index.IsConstant(mul.input(1)) ? 1 : index.IsConstant(mul.input(0)) ? 0 : -1;
    if (ci < 0 || index.IsConstant(mul.input(1 - ci))) continue;
    SmoothingSite site{x, p, ci, {}};
    int64_t k = -1;
    bool ok = true;
    for (const auto& u : index.Consumers(x)) {
      const auto& mm = index.node(u.node);
      const onnx::TensorProto* w = mm.input_size() == 2 ? index.Constant(mm.input(1)) : nullptr;
      ok = ok && TraitsOf(mm).weight_layout == WeightLayoutKind::kMatMul && u.input == 0 && quantized.count(u.node) &&
           w != nullptr && IsFloat32(*w) && w->dims_size() == 2 && index.Consumers(mm.input(1)).size() == 1 &&
           !index.IsGraphInput(mm.input(1)) && (k < 0 || w->dims(0) == k);
      if (!ok) break;
      k = w->dims(0);
      site.matmuls.push_back(u.node);
    }
    const onnx::TensorProto* c = index.Constant(mul.input(ci));
    if (!ok || site.matmuls.empty() || c == nullptr || !IsFloat32(*c) || !PerChannelOrScalar(*c, k)) continue;
    sites.push_back(std::move(site));
  }
  return sites;
}

std::vector<float> SmoothingScales(const std::vector<float>& activation_amax, const std::vector<float>& weight_amax,
                                   double alpha) {
  std::vector<float> s(activation_amax.size(), 1.0f);
  for (size_t j = 0; j < s.size(); ++j) {
    const double a = activation_amax[j], w = weight_amax[j];
    if (a > 0.0 && w > 0.0 && std::isfinite(a) && std::isfinite(w)) {
      s[j] = static_cast<float>(std::pow(a, alpha) / std::pow(w, 1.0 - alpha));
    }
  }
  return s;
}

int SmoothActivations(onnx::GraphProto* graph, const GraphIndex& index, const std::vector<SmoothingSite>& sites,
                      const std::map<std::string, std::vector<float>>& channel_amax, double alpha) {
  // Each site is scaled in place, one weight at a time: a copy of every smoothed weight at once
  // was 1.1 GiB more at peak on a 2.3 GiB decoder. The reads stay those of the unedited graph: a
  // weight belongs to one site (its only reader is the site's MatMul), and the Mul's constant gets
  // a fresh initializer instead of being edited.
  int smoothed = 0;
  for (const auto& site : sites) {
    auto it = channel_amax.find(site.tensor);
    const auto& mm0 = index.node(site.matmuls.front());
    const int64_t k = index.Constant(mm0.input(1))->dims(0);
    if (it == channel_amax.end() || static_cast<int64_t>(it->second.size()) != k) continue;
    // Weights are rewritten in place: each must be an initializer of this graph that nothing else
    // reads (a shared weight would change for its other readers too).
    std::vector<onnx::TensorProto*> weights;
    for (int m : site.matmuls) {
      const std::string& name = index.node(m).input(1);
      onnx::TensorProto* w = index.Consumers(name).size() == 1 ? OwnInitializer(graph, name) : nullptr;
      if (w == nullptr || w->dims_size() != 2 || w->dims(0) != k) break;
      weights.push_back(w);
    }
    if (weights.size() != site.matmuls.size()) continue;
    std::vector<float> wmax(static_cast<size_t>(k), 0.0f);
    for (onnx::TensorProto* w : weights) {
      const int64_t n = w->dims(1);
      WithFloats(w, [&](float* v) {
        for (int64_t j = 0; j < k; ++j) {
          for (int64_t c = 0; c < n; ++c) wmax[j] = std::max(wmax[j], std::fabs(v[j * n + c]));
        }
      });
    }
    const std::vector<float> s = SmoothingScales(it->second, wmax, alpha);
    for (onnx::TensorProto* w : weights) {
      const int64_t n = w->dims(1);
      WithFloats(w, [&](float* v) {
        for (int64_t j = 0; j < k; ++j) {
          for (int64_t c = 0; c < n; ++c) v[j * n + c] *= s[j];
        }
      });
    }
    const std::vector<float> c = TensorToFloats(*index.Constant(index.node(site.mul).input(site.constant_input)));
    std::vector<float> constant(static_cast<size_t>(k));
    for (int64_t j = 0; j < k; ++j) constant[j] = (c.size() == 1 ? c[0] : c[j]) / s[j];
    // The constant gets a fresh initializer: it may be shared or a Constant node's output.
    onnx::NodeProto* mul = graph->mutable_node(site.mul);
    auto* t = graph->add_initializer();
    t->set_name(onnxio::FreshTensorName(*graph, mul->input(site.constant_input) + "_smoothed"));
    SetFloats(t, {static_cast<int64_t>(constant.size())}, constant);
    mul->set_input(site.constant_input, t->name());
    ++smoothed;
  }
  return smoothed;
}

}  // namespace ptqkit
