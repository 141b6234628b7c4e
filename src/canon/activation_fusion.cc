#include "canon/activation_fusion.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "canon/channel_constants.h"
#include "onnx/graph_editor.h"
#include "onnx/graph_index.h"
#include "onnx/model_prep.h"

namespace ptqkit::canon {
namespace {

bool Near(double a, double b) { return std::fabs(a - b) <= 1e-6 * std::max(1.0, std::fabs(b)); }

// A scalar (one-element) float constant.
std::optional<double> Scalar(const GraphIndex& g, const std::string& tensor) {
  auto c = FindConstant(g, tensor);
  if (!c) return std::nullopt;
  const auto v = TensorToFloats(*c->value);
  if (v.size() != 1 || c->value->dims_size() > 1) return std::nullopt;
  return v[0];
}

bool OnlyReadBy(const GraphIndex& g, const std::string& tensor, int node) {
  const auto& uses = g.Consumers(tensor);
  return !g.IsGraphOutput(tensor) && uses.size() == 1 && uses[0].node == node;
}

// Clip(t, 0, m) at node c: m, or nullopt (bounds from inputs at opset >= 11, attributes before).
std::optional<double> ClipToZeroAndMax(const GraphIndex& g, int c) {
  const auto& n = g.node(c);
  if (n.op_type() != "Clip" || !n.domain().empty()) return std::nullopt;
  double lo = 0, hi = 0;
  if (n.input_size() >= 3 && !n.input(1).empty() && !n.input(2).empty()) {
    auto l = Scalar(g, n.input(1)), h = Scalar(g, n.input(2));
    if (!l || !h) return std::nullopt;
    lo = *l;
    hi = *h;
  } else if (n.input_size() == 1) {
    lo = FloatAttribute(n, "min", -1.0f);
    hi = FloatAttribute(n, "max", -1.0f);
  } else {
    return std::nullopt;
  }
  if (lo != 0.0 || !(hi > 0.0)) return std::nullopt;
  return hi;
}

struct HardSigmoidPattern {
  std::string x;          // its input
  double alpha = 0, beta = 0;
  std::vector<int> nodes;  // Add, Clip, and the Div/Mul (last: its output is the pattern's)
};

// The decomposition whose last node (the Div or Mul by a constant) is node d.
std::optional<HardSigmoidPattern> HardSigmoidAt(const GraphIndex& g, int d) {
  const auto& n = g.node(d);
  if (!n.domain().empty() || n.input_size() != 2 || n.output_size() != 1) return std::nullopt;
  if (n.op_type() != "Div" && n.op_type() != "Mul") return std::nullopt;
  for (int side = 0; side < (n.op_type() == "Mul" ? 2 : 1); ++side) {
    const auto k = Scalar(g, n.input(1 - side));
    const int c = g.Producer(n.input(side));
    if (!k || c < 0 || !OnlyReadBy(g, n.input(side), d)) continue;
    const auto m = ClipToZeroAndMax(g, c);
    const auto& clip = g.node(c);
    const int a = g.Producer(clip.input(0));
    if (!m || a < 0 || !OnlyReadBy(g, clip.input(0), c)) continue;
    const auto& add = g.node(a);
    if (add.op_type() != "Add" || !add.domain().empty() || add.input_size() != 2) continue;
    for (int s = 0; s < 2; ++s) {
      const auto b = Scalar(g, add.input(1 - s));
      if (!b || g.IsConstant(add.input(s))) continue;
      HardSigmoidPattern p;
      p.x = add.input(s);
      if (n.op_type() == "Div") {
        if (!Near(*k, *m)) continue;
        p.alpha = 1.0 / *m;
        p.beta = *b / *m;
      } else {
        if (!Near(*k * *m, 1.0)) continue;
        p.alpha = *k;
        p.beta = *k * *b;
      }
      p.nodes = {a, c, d};
      return p;
    }
  }
  return std::nullopt;
}

bool IsHardSwishSlope(double alpha, double beta) { return Near(alpha, 1.0 / 6.0) && Near(beta, 0.5); }

struct Fusion {
  std::vector<int> nodes;  // replaced; the last one's output is the fused operator's
  std::string x;
  bool hard_swish = false;
  double alpha = 0, beta = 0;
};

// x · HardSigmoid(x) at the Mul node i (the HardSigmoid an operator or a decomposition).
std::optional<Fusion> HardSwishMulAt(const GraphIndex& g, int i) {
  const auto& n = g.node(i);
  if (n.op_type() != "Mul" || !n.domain().empty() || n.input_size() != 2) return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    const int h = g.Producer(n.input(side));
    if (h < 0 || !OnlyReadBy(g, n.input(side), i)) continue;
    const auto& hn = g.node(h);
    if (hn.op_type() == "HardSigmoid" && hn.domain().empty() && hn.input(0) == n.input(1 - side) &&
        IsHardSwishSlope(FloatAttribute(hn, "alpha", 0.2f), FloatAttribute(hn, "beta", 0.5f))) {
      return Fusion{{h, i}, hn.input(0), true, 0, 0};
    }
    if (auto p = HardSigmoidAt(g, h); p && p->x == n.input(1 - side) && IsHardSwishSlope(p->alpha, p->beta)) {
      p->nodes.push_back(i);
      return Fusion{p->nodes, p->x, true, 0, 0};
    }
  }
  return std::nullopt;
}

// x · Clip(x + 3, 0, 6) / 6 (or · 1/6) at its last node d.
std::optional<Fusion> ScaledHardSwishAt(const GraphIndex& g, int d) {
  const auto& n = g.node(d);
  if ((n.op_type() != "Div" && n.op_type() != "Mul") || !n.domain().empty() || n.input_size() != 2) return std::nullopt;
  for (int side = 0; side < (n.op_type() == "Mul" ? 2 : 1); ++side) {
    const auto k = Scalar(g, n.input(1 - side));
    const int mul = g.Producer(n.input(side));
    if (!k || mul < 0 || !OnlyReadBy(g, n.input(side), d)) continue;
    const double per = n.op_type() == "Div" ? 1.0 / *k : *k;
    if (!Near(per, 1.0 / 6.0)) continue;
    const auto& mn = g.node(mul);
    if (mn.op_type() != "Mul" || !mn.domain().empty() || mn.input_size() != 2) continue;
    for (int s = 0; s < 2; ++s) {
      const int c = g.Producer(mn.input(s));
      if (c < 0 || !OnlyReadBy(g, mn.input(s), mul)) continue;
      const auto m = ClipToZeroAndMax(g, c);
      const int a = g.Producer(g.node(c).input(0));
      if (!m || !Near(*m, 6.0) || a < 0 || !OnlyReadBy(g, g.node(c).input(0), c)) continue;
      const auto& add = g.node(a);
      if (add.op_type() != "Add" || !add.domain().empty() || add.input_size() != 2) continue;
      for (int t = 0; t < 2; ++t) {
        const auto b = Scalar(g, add.input(1 - t));
        if (b && Near(*b, 3.0) && add.input(t) == mn.input(1 - s)) return Fusion{{a, c, mul, d}, add.input(t), true, 0, 0};
      }
    }
  }
  return std::nullopt;
}

std::optional<Fusion> FusionAt(const GraphIndex& g, int i, int64_t opset) {
  if (auto f = ScaledHardSwishAt(g, i)) return f;
  if (auto f = HardSwishMulAt(g, i)) {
    // Below opset 14 x · HardSigmoid(x) is the canonical form already, unless it was written out.
    if (opset >= 14 || g.node(f->nodes.front()).op_type() != "HardSigmoid") return f;
  }
  if (auto p = HardSigmoidAt(g, i)) return Fusion{p->nodes, p->x, false, p->alpha, p->beta};
  return std::nullopt;
}

onnx::NodeProto HardSigmoidNode(const std::string& name, const std::string& x, const std::string& out, double alpha,
                                double beta) {
  onnx::NodeProto n = GraphEditor::MakeNode("HardSigmoid", name, {x}, out);
  auto* a = n.add_attribute();
  a->set_name("alpha");
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(static_cast<float>(alpha));
  auto* b = n.add_attribute();
  b->set_name("beta");
  b->set_type(onnx::AttributeProto::FLOAT);
  b->set_f(static_cast<float>(beta));
  return n;
}

}  // namespace

bool HasActivationFusion(const onnx::ModelProto& model) {
  const GraphIndex g(model.graph());
  const int64_t opset = onnxio::DefaultOpset(model);
  for (int i = 0; i < g.num_nodes(); ++i) {
    if (FusionAt(g, i, opset)) return true;
  }
  return false;
}

bool FuseOneActivation(onnx::ModelProto* model) {
  onnx::GraphProto* graph = model->mutable_graph();
  const GraphIndex g(*graph);
  const int64_t opset = onnxio::DefaultOpset(*model);
  for (int i = 0; i < g.num_nodes(); ++i) {
    auto f = FusionAt(g, i, opset);
    if (!f) continue;
    const int last = f->nodes.back();
    const std::string out = g.node(last).output(0);
    const std::string name = g.node(last).name();
    std::set<std::string> replaced;
    for (int k : f->nodes) {
      for (const auto& in : g.node(k).input()) {
        if (g.IsConstant(in)) replaced.insert(in);
      }
    }
    std::vector<onnx::NodeProto> fused;
    GraphEditor editor(graph);
    if (f->hard_swish && opset >= 14) {
      fused.push_back(GraphEditor::MakeNode("HardSwish", name, {f->x}, out));
    } else if (f->hard_swish) {
      const std::string h = editor.Fresh(out + "_hardsigmoid");
      fused.push_back(HardSigmoidNode(editor.Fresh(name + "_hardsigmoid"), f->x, h, 1.0 / 6.0, 0.5));
      fused.push_back(GraphEditor::MakeNode("Mul", name, {f->x, h}, out));
    } else {
      fused.push_back(HardSigmoidNode(name, f->x, out, f->alpha, f->beta));
    }
    // The fused operator takes the last node's place (its inputs are all ready there); the other
    // nodes of the pattern come before it in a sorted graph, so their indices survive the splice.
    std::vector<int> dead(f->nodes.begin(), f->nodes.end() - 1);
    if (std::any_of(dead.begin(), dead.end(), [&](int k) { return k > last; })) continue;
    if (fused.size() == 2) editor.InsertBefore(last, fused.front());
    *graph->mutable_node(last) = fused.back();
    editor.Splice();
    RemoveNodes(graph, dead);
    GraphEditor(graph).RemoveUnread(replaced);
    return true;
  }
  return false;
}

}  // namespace ptqkit::canon
