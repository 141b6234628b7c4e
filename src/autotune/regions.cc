#include "autotune/regions.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "onnx/graph_index.h"
#include "onnx/op_traits.h"
#include "ptqkit/error.h"

namespace ptqkit::autotune {
namespace {

bool IsCore(const std::string& op) { return TraitsOf(op).role == OpRole::kLinear; }

// Ops that TensorRT and ONNX Runtime fuse into, or run right after, a convolution or matrix
// product: the tail a region takes along (OpFlag::kRegionTail).
bool IsEpilogue(const std::string& op) { return TraitsOf(op).Has(OpFlag::kRegionTail); }
constexpr int kMaxTail = 6;

// Known shape of `tensor` from value_info / graph inputs / outputs; dims that are not fixed
// (batch, sequence) count as 1 — the costs only need to be comparable within one model.
std::map<std::string, std::vector<int64_t>> KnownShapes(const onnx::GraphProto& g) {
  std::map<std::string, std::vector<int64_t>> shapes;
  auto add = [&](const onnx::ValueInfoProto& v) {
    if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return;
    std::vector<int64_t> dims;
    for (const auto& d : v.type().tensor_type().shape().dim()) dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
    shapes[v.name()] = std::move(dims);
  };
  for (const auto& v : g.input()) add(v);
  for (const auto& v : g.output()) add(v);
  for (const auto& v : g.value_info()) add(v);
  return shapes;
}

double Elements(const std::vector<int64_t>& dims) {
  double n = 1.0;
  for (int64_t d : dims) n *= d > 0 ? static_cast<double>(d) : 1.0;
  return n;
}

std::string ShapeText(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "x" : "") + (dims[i] > 0 ? std::to_string(dims[i]) : "?");
  return s + "]";
}

// The attributes that change what a node computes, in a compact deterministic form (tensor and
// graph attributes are summarised by kind: their values never make two blocks differ in shape).
std::string AttributeText(const onnx::NodeProto& node) {
  std::vector<std::string> parts;
  for (const auto& a : node.attribute()) {
    std::string v;
    if (a.has_i()) v = std::to_string(a.i());
    else if (a.has_f()) v = fmt::format("{:g}", a.f());
    else if (a.has_s()) v = a.s();
    else if (a.ints_size() > 0) v = fmt::format("{}", fmt::join(a.ints(), ","));
    else if (a.floats_size() > 0) v = fmt::format("{}", fmt::join(a.floats(), ","));
    else v = "~";
    parts.push_back(a.name() + "=" + v);
  }
  std::sort(parts.begin(), parts.end());
  return fmt::format("{}", fmt::join(parts, ";"));
}

class RegionBuilder {
 public:
  explicit RegionBuilder(const onnx::ModelProto& model)
      : graph_(model.graph()), index_(model.graph()), shapes_(KnownShapes(model.graph())) {}

  std::vector<Region> Build(const std::vector<std::string>& quantized_nodes) {
    const std::set<std::string> quantized(quantized_nodes.begin(), quantized_nodes.end());
    std::vector<Region> regions;
    std::set<std::string> claimed;
    for (const auto& name : quantized_nodes) {  // graph order: each core claims its tail first
      const int n = index_.FindNode(name);
      if (n < 0 || !IsCore(graph_.node(n).op_type())) continue;
      Region r;
      r.core = name;
      r.quantized_nodes.push_back(name);
      claimed.insert(name);
      std::vector<int> members = {n};
      for (int t : Tail(n)) {
        const std::string& tn = graph_.node(t).name();
        r.tail_nodes.push_back(tn);
        members.push_back(t);
        if (quantized.count(tn) && !claimed.count(tn)) {
          r.quantized_nodes.push_back(tn);
          claimed.insert(tn);
        }
      }
      Describe(members, &r);
      regions.push_back(std::move(r));
    }
    for (const auto& name : quantized_nodes) {
      if (claimed.count(name)) continue;
      Region r;
      r.quantized_nodes.push_back(name);
      const int n = index_.FindNode(name);
      if (n < 0) {
        r.signature = "subgraph:" + name;  // a control-flow body: never grouped with anything
      } else {
        Describe({n}, &r);
      }
      regions.push_back(std::move(r));
    }
    return regions;
  }

 private:
  // The single-consumer epilogue chain after node n.
  std::vector<int> Tail(int n) const {
    std::vector<int> tail;
    int current = n;
    while (static_cast<int>(tail.size()) < kMaxTail) {
      const auto& node = graph_.node(current);
      if (node.output_size() != 1 || index_.IsGraphOutput(node.output(0))) break;
      const auto& uses = index_.Consumers(node.output(0));
      if (uses.size() != 1) break;
      const auto& next = graph_.node(uses[0].node);
      if (!IsEpilogue(next.op_type())) break;
      tail.push_back(uses[0].node);
      current = uses[0].node;
    }
    return tail;
  }

  std::vector<int64_t> Shape(const std::string& tensor) const {
    if (const auto* c = index_.Constant(tensor)) return TensorShape(*c);
    auto it = shapes_.find(tensor);
    return it == shapes_.end() ? std::vector<int64_t>{} : it->second;
  }

  double CoreCost(const onnx::NodeProto& node) const {
    const double out = node.output_size() > 0 ? Elements(Shape(node.output(0))) : 0.0;
    const std::vector<int64_t> w = node.input_size() > 1 ? Shape(node.input(1)) : std::vector<int64_t>{};
    const std::vector<int64_t> a = node.input_size() > 0 ? Shape(node.input(0)) : std::vector<int64_t>{};
    const WeightLayoutKind kind = TraitsOf(node).weight_layout;
    // A convolution: output (input, for ConvTranspose) elements x weight elements per output channel.
    if (kind == WeightLayoutKind::kConv && !w.empty() && w[0] > 0) return out * Elements(w) / static_cast<double>(w[0]);
    if (kind == WeightLayoutKind::kConvTranspose && !w.empty() && w[0] > 0) {
      return Elements(a) * Elements(w) / static_cast<double>(w[0]);
    }
    // MatMul / Gemm: output elements x K (K from the activation's last axis, else the weight's).
    const WeightLayout layout = WeightLayoutOf(node, w);
    int64_t k = -1;
    if (kind == WeightLayoutKind::kGemm) {
      if (a.size() == 2) k = layout.transposed_input ? a[0] : a[1];
    } else if (!a.empty()) {
      k = a.back();
    }
    if (k <= 0 && w.size() >= 2) k = layout.in_channels;
    if (k > 0 && out > 1.0) return out * static_cast<double>(k);
    return Elements(w);  // no shapes known: the weight size is the best proxy left
  }

  void Describe(const std::vector<int>& members, Region* r) const {
    std::string sig;
    for (size_t i = 0; i < members.size(); ++i) {
      const auto& node = graph_.node(members[i]);
      sig += (i ? " > " : "") + node.op_type() + "(" + AttributeText(node) + ")";
      for (const auto& in : node.input()) {
        if (in.empty()) continue;
        sig += (index_.IsConstant(in) ? " w" : " a") + ShapeText(Shape(in));
      }
      const double outputs = node.output_size() > 0 ? Elements(Shape(node.output(0))) : 0.0;
      r->cost += IsCore(node.op_type()) && i == 0 ? CoreCost(node) : outputs;
    }
    r->signature = sig;
  }

  const onnx::GraphProto& graph_;
  GraphIndex index_;
  std::map<std::string, std::vector<int64_t>> shapes_;
};

}  // namespace

std::string SchemeName(Scheme scheme) {
  switch (scheme) {
    case Scheme::kQuantize: return "quantize";
    case Scheme::kCoreOnly: return "core_only";
    case Scheme::kFloat: return "float";
  }
  return "?";
}

Scheme ParseScheme(const std::string& name) {
  if (name == "quantize") return Scheme::kQuantize;
  if (name == "core_only") return Scheme::kCoreOnly;
  if (name == "float") return Scheme::kFloat;
  throw Error(fmt::format("unknown autotune scheme '{}' (expected quantize, core_only or float)", name));
}

std::vector<Region> BuildRegions(const onnx::ModelProto& model, const std::vector<std::string>& quantized_nodes) {
  return RegionBuilder(model).Build(quantized_nodes);
}

bool UseMeasuredCosts(const std::map<std::string, double>& node_ms, std::vector<Region>* regions) {
  // Coverage counts the regions' anchors (core or lone node): tail nodes may be missing because
  // ONNX Runtime's basic level already fuses them into their core (BatchNormalization into Conv),
  // whose time then includes theirs.
  int anchors = 0, found = 0;
  std::vector<double> costs;
  for (const Region& r : *regions) {
    const std::string& anchor = r.core.empty() ? r.quantized_nodes.front() : r.core;
    ++anchors;
    double cost = 0.0;
    if (auto it = node_ms.find(anchor); it != node_ms.end()) {
      ++found;
      cost += it->second;
    }
    for (const auto& n : r.tail_nodes) {
      if (auto it = node_ms.find(n); it != node_ms.end()) cost += it->second;
    }
    costs.push_back(cost);
  }
  if (anchors == 0 || found * 10 < anchors * 9) return false;
  for (size_t i = 0; i < regions->size(); ++i) (*regions)[i].cost = costs[i];
  return true;
}

std::vector<RegionGroup> GroupRegions(const std::vector<Region>& regions) {
  std::map<std::string, RegionGroup> by_signature;
  for (const Region& r : regions) {
    RegionGroup& g = by_signature[r.signature];
    g.signature = r.signature;
    g.regions.push_back(r);
    g.cost += r.cost;
  }
  std::vector<RegionGroup> groups;
  for (auto& [sig, g] : by_signature) {
    // core_only differs from both others only when a core node has a quantized tail.
    const bool has_tail = std::any_of(g.regions.begin(), g.regions.end(),
                                      [](const Region& r) { return !r.core.empty() && r.quantized_nodes.size() > 1; });
    // The biggest change first: with schemes_per_region 2 (quick) the one alternative tried is
    // all-float, which is what a runtime without fused integer kernels for this region needs.
    g.schemes = {Scheme::kQuantize, Scheme::kFloat};
    if (has_tail) g.schemes.push_back(Scheme::kCoreOnly);
    groups.push_back(std::move(g));
  }
  std::stable_sort(groups.begin(), groups.end(), [](const RegionGroup& a, const RegionGroup& b) {
    return a.cost != b.cost ? a.cost > b.cost : a.signature < b.signature;
  });
  return groups;
}

std::vector<std::string> NodesInFloat(const RegionGroup& group, Scheme scheme) {
  std::vector<std::string> nodes;
  for (const Region& r : group.regions) {
    for (size_t i = 0; i < r.quantized_nodes.size(); ++i) {
      const bool is_core = i == 0 && !r.core.empty();
      if (scheme == Scheme::kFloat || (scheme == Scheme::kCoreOnly && !is_core)) nodes.push_back(r.quantized_nodes[i]);
    }
  }
  return nodes;
}

}  // namespace ptqkit::autotune
