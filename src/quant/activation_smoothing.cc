#include "quant/activation_smoothing.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "onnx/fresh_name.h"

namespace ptqkit {
namespace {

int64_t NumElements(const onnx::TensorProto& t) {
  int64_t n = 1;
  for (auto d : t.dims()) n *= d;
  return n;
}

bool IsFloat32(const onnx::TensorProto& t) { return t.data_type() == onnx::TensorProto::FLOAT; }

// The constant's values broadcast over K channels of the last axis: a scalar or [.., K] with
// every other dim 1.
bool PerChannelOrScalar(const onnx::TensorProto& c, int64_t k) {
  const int64_t n = NumElements(c);
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

}  // namespace

std::vector<SmoothingSite> FindSmoothingSites(const GraphIndex& index, const Placement& plan) {
  std::set<int> quantized(plan.quantized_nodes.begin(), plan.quantized_nodes.end());
  std::set<std::string> candidates;
  for (int i : plan.quantized_nodes) {
    const auto& n = index.node(i);
    if (n.op_type() == "MatMul" && n.domain().empty()) candidates.insert(n.input(0));
  }
  std::vector<SmoothingSite> sites;
  for (const auto& x : candidates) {
    if (index.IsGraphOutput(x)) continue;
    const int p = index.Producer(x);
    if (p < 0) continue;
    const auto& mul = index.node(p);
    if (mul.op_type() != "Mul" || !mul.domain().empty() || mul.input_size() != 2) continue;
    const int ci = index.IsConstant(mul.input(1)) ? 1 : index.IsConstant(mul.input(0)) ? 0 : -1;
    if (ci < 0 || index.IsConstant(mul.input(1 - ci))) continue;
    SmoothingSite site{x, p, ci, {}};
    int64_t k = -1;
    bool ok = true;
    for (const auto& u : index.Consumers(x)) {
      const auto& mm = index.node(u.node);
      const onnx::TensorProto* w = mm.input_size() == 2 ? index.Constant(mm.input(1)) : nullptr;
      ok = ok && mm.op_type() == "MatMul" && mm.domain().empty() && u.input == 0 && quantized.count(u.node) &&
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
  // Computed first, applied afterwards, so that every read goes through the unedited graph.
  struct Edit {
    int mul, constant_input;
    std::vector<float> constant;  // [K]
    std::vector<std::pair<std::string, std::vector<float>>> weights;  // name -> [K, N]
    std::vector<std::vector<int64_t>> weight_dims;
  };
  std::vector<Edit> edits;
  for (const auto& site : sites) {
    auto it = channel_amax.find(site.tensor);
    const auto& mm0 = index.node(site.matmuls.front());
    const int64_t k = index.Constant(mm0.input(1))->dims(0);
    if (it == channel_amax.end() || static_cast<int64_t>(it->second.size()) != k) continue;
    // Weights are rewritten in place: each must be an initializer of this graph.
    if (!std::all_of(site.matmuls.begin(), site.matmuls.end(),
                     [&](int m) { return OwnInitializer(graph, index.node(m).input(1)) != nullptr; })) {
      continue;
    }
    Edit e{site.mul, site.constant_input, {}, {}, {}};
    std::vector<float> wmax(static_cast<size_t>(k), 0.0f);
    for (int m : site.matmuls) {
      const onnx::TensorProto* w = index.Constant(index.node(m).input(1));
      const int64_t n = w->dims(1);
      e.weights.emplace_back(index.node(m).input(1), TensorToFloats(*w));
      e.weight_dims.push_back({k, n});
      const auto& v = e.weights.back().second;
      for (int64_t j = 0; j < k; ++j) {
        for (int64_t c = 0; c < n; ++c) wmax[j] = std::max(wmax[j], std::fabs(v[j * n + c]));
      }
    }
    const std::vector<float> s = SmoothingScales(it->second, wmax, alpha);
    for (auto& [name, v] : e.weights) {
      const int64_t n = static_cast<int64_t>(v.size()) / k;
      for (int64_t j = 0; j < k; ++j) {
        for (int64_t c = 0; c < n; ++c) v[j * n + c] *= s[j];
      }
    }
    const std::vector<float> c = TensorToFloats(*index.Constant(index.node(site.mul).input(site.constant_input)));
    e.constant.resize(static_cast<size_t>(k));
    for (int64_t j = 0; j < k; ++j) e.constant[j] = (c.size() == 1 ? c[0] : c[j]) / s[j];
    edits.push_back(std::move(e));
  }
  for (auto& e : edits) {
    for (size_t m = 0; m < e.weights.size(); ++m) {
      SetFloats(OwnInitializer(graph, e.weights[m].first), e.weight_dims[m], e.weights[m].second);
    }
    // The constant gets a fresh initializer: it may be shared or a Constant node's output.
    onnx::NodeProto* mul = graph->mutable_node(e.mul);
    auto* t = graph->add_initializer();
    t->set_name(onnxio::FreshTensorName(*graph, mul->input(e.constant_input) + "_smoothed"));
    SetFloats(t, {static_cast<int64_t>(e.constant.size())}, e.constant);
    mul->set_input(e.constant_input, t->name());
  }
  return static_cast<int>(edits.size());
}

}  // namespace ptqkit
