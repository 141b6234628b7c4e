#include "quant/corrections/activation_smoothing.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <numeric>
#include <set>

#include "onnx/graph_editor.h"
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

// An inserted Mul costs a pass over X at run time (5-7% of a BERT-class encoder's INT8 latency for
// 18 of them, ONNX Runtime and OpenVINO CPU), so it goes only where X has outlier channels: where
// the largest channel's range is at least this many times the median one's, a per-tensor INT8
// scale leaves the typical channel fewer than 127 / 4 ~ 32 steps. (An encoder's attention contexts
// measured 2-5 and gained nothing from smoothing; its LayerNorm outputs 5-21 and GELU outputs 5-24.)
constexpr double kMinOutlierRatioForInsertedMul = 4.0;

// Largest over median of the per-channel maxima (0 when the median is 0).
double OutlierRatio(std::vector<float> amax) {
  if (amax.empty()) return 0.0;
  const float largest = *std::max_element(amax.begin(), amax.end());
  std::nth_element(amax.begin(), amax.begin() + amax.size() / 2, amax.end());
  const double median = amax[amax.size() / 2];
  return median > 0.0 ? largest / median : 0.0;
}

std::string FloatBytes(const std::vector<float>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
}

void SetFloats(onnx::TensorProto* t, const std::vector<int64_t>& dims, const std::vector<float>& values) {
  const std::string name = t->name();
  t->Clear();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (auto d : dims) t->add_dims(d);
  t->set_raw_data(FloatBytes(values));
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

// X / s folded into the constant of the Mul producing X. The constant gets a fresh initializer:
// it may be shared or a Constant node's output.
void FoldDivision(onnx::GraphProto* graph, GraphEditor* editor, const GraphIndex& index, const SmoothingSite& site,
                  const std::vector<float>& s) {
  const std::vector<float> c = TensorToFloats(*index.Constant(index.node(site.mul).input(site.constant_input)));
  std::vector<float> constant(s.size());
  for (size_t j = 0; j < s.size(); ++j) constant[j] = (c.size() == 1 ? c[0] : c[j]) / s[j];
  onnx::NodeProto* mul = graph->mutable_node(site.mul);
  const std::string name = editor->Fresh(mul->input(site.constant_input) + "_smoothed");
  editor->AddInitializer(name, onnx::TensorProto::FLOAT, {static_cast<int64_t>(constant.size())}, FloatBytes(constant));
  mul->set_input(site.constant_input, name);
}

// X / s as a new Mul ahead of the site's MatMuls (before the first of them in node order, where X
// exists); X's other readers keep X.
void InsertDivision(onnx::GraphProto* graph, GraphEditor* editor, const SmoothingSite& site,
                    const std::vector<float>& s) {
  std::vector<float> inverse(s.size());
  for (size_t j = 0; j < s.size(); ++j) inverse[j] = 1.0f / s[j];
  const std::string scale = editor->Fresh(site.tensor + "_smoothing_scale");
  editor->AddInitializer(scale, onnx::TensorProto::FLOAT, {static_cast<int64_t>(inverse.size())}, FloatBytes(inverse));
  const std::string smoothed = editor->Fresh(site.tensor + "_smoothed");
  const int first = *std::min_element(site.matmuls.begin(), site.matmuls.end());
  editor->InsertBefore(first, GraphEditor::MakeNode("Mul", editor->Fresh(site.tensor + "_smoothing"),
                                                    {site.tensor, scale}, smoothed));
  for (int m : site.matmuls) graph->mutable_node(m)->set_input(0, smoothed);
}

// Whether reader `u` of X can take smoothing: a quantized MatMul reading X at input 0, with a
// float32 [K, N] weight that only it reads (its rows are rewritten in place).
bool SmoothableReader(const GraphIndex& index, const std::set<int>& quantized, const TensorUse& u) {
  const auto& mm = index.node(u.node);
  if (TraitsOf(mm).weight_layout != WeightLayoutKind::kMatMul || u.input != 0 || !quantized.count(u.node)) return false;
  const onnx::TensorProto* w = mm.input_size() == 2 ? index.Constant(mm.input(1)) : nullptr;
  return w != nullptr && IsFloat32(*w) && w->dims_size() == 2 && index.Consumers(mm.input(1)).size() == 1 &&
         !index.IsGraphInput(mm.input(1));
}

// The input index of the constant of the Mul producing X when X's division can be folded into it
// (a Mul by a scalar or per-channel float constant, X read by smoothed MatMuls only); -1 if not.
int FoldableMulConstant(const GraphIndex& index, const std::string& x, size_t readers, size_t smoothable, int64_t k,
                        bool keep_gelu_constants) {
  const int p = index.Producer(x);
  if (p < 0 || index.IsGraphOutput(x) || smoothable != readers) return -1;
  const auto& mul = index.node(p);
  if (mul.op_type() != "Mul" || !mul.domain().empty() || mul.input_size() != 2) return -1;
  if (keep_gelu_constants && IsExportedGeluTail(index, p)) return -1;
  const int ci = index.IsConstant(mul.input(1)) ? 1 : index.IsConstant(mul.input(0)) ? 0 : -1;
  if (ci < 0 || index.IsConstant(mul.input(1 - ci))) return -1;
  const onnx::TensorProto* c = index.Constant(mul.input(ci));
  return c != nullptr && IsFloat32(*c) && PerChannelOrScalar(*c, k) ? ci : -1;
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
    if (index.IsConstant(x)) continue;
    SmoothingSite site{x, -1, -1, {}};
    const auto& readers = index.Consumers(x);
    for (const auto& u : readers) {
      if (SmoothableReader(index, quantized, u)) site.matmuls.push_back(u.node);
    }
    if (site.matmuls.empty()) continue;
    // Readers of one X have weights of K rows: K is X's last dimension.
    const int64_t k = index.Constant(index.node(site.matmuls.front()).input(1))->dims(0);
    site.constant_input = FoldableMulConstant(index, x, readers.size(), site.matmuls.size(), k, keep_gelu_constants);
    if (site.constant_input >= 0) site.mul = index.Producer(x);
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
                      const std::map<std::string, std::vector<float>>& channel_amax, double alpha,
                      int* inserted) {
  // Each site is scaled in place, one weight at a time: a copy of every smoothed weight at once
  // was 1.1 GiB more at peak on a 2.3 GiB decoder. The reads stay those of the unedited graph: a
  // weight belongs to one site (its only reader is the site's MatMul), and the Mul's constant gets
  // a fresh initializer instead of being edited.
  int smoothed = 0;
  if (inserted) *inserted = 0;
  GraphEditor editor(graph);
  for (const auto& site : sites) {
    auto it = channel_amax.find(site.tensor);
    const auto& mm0 = index.node(site.matmuls.front());
    const int64_t k = index.Constant(mm0.input(1))->dims(0);
    if (it == channel_amax.end() || static_cast<int64_t>(it->second.size()) != k) continue;
    if (site.mul < 0 && OutlierRatio(it->second) < kMinOutlierRatioForInsertedMul) continue;
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
    if (site.mul < 0) {
      InsertDivision(graph, &editor, site, s);
      if (inserted) ++*inserted;
    } else {
      FoldDivision(graph, &editor, index, site, s);
    }
    ++smoothed;
  }
  editor.Splice();
  return smoothed;
}

}  // namespace ptqkit
