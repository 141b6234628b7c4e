#include "canon/linear_folds.h"

#include <cmath>
#include <optional>
#include <set>

#include "canon/channel_constants.h"
#include "onnx/graph_editor.h"
#include "onnx/graph_index.h"
#include "onnx/op_traits.h"

namespace ptqkit::canon {
namespace {

// A Conv/ConvTranspose/Gemm (or a MatMul of a 2-D input, which becomes a Gemm) whose output
// channels can absorb a scale and a shift.
struct LinearNode {
  int node = -1;
  ConstantSource weight;
  std::optional<ConstantSource> bias;  // Conv's B, Gemm's C
  int64_t channels = 0;
  int output_rank = 0;                 // of its output (channel axis 1)
};

// `matrices`: the tensors known to be 2-D, whose MatMul may be folded into (nullptr: none; the
// MatMul's output channel axis 1 is its weight's columns only when its input is a matrix).
std::optional<LinearNode> FoldableLinear(const GraphIndex& g, int i, const std::set<std::string>* matrices) {
  const auto& n = g.node(i);
  const bool conv = IsConvolution(n);
  const bool matmul = n.op_type() == "MatMul" && n.input_size() == 2 && matrices != nullptr &&
                      matrices->count(n.input(0)) > 0;
  if (!n.domain().empty() || (!conv && !matmul && n.op_type() != "Gemm") || n.input_size() < 2 ||
      n.output_size() != 1) {
    return std::nullopt;
  }
  // Its output must be read by exactly one node (the one folded in) and not be a graph output.
  if (g.IsGraphOutput(n.output(0)) || g.Consumers(n.output(0)).size() != 1) return std::nullopt;
  LinearNode lin;
  lin.node = i;
  auto w = FindConstant(g, n.input(1));
  if (!w) return std::nullopt;
  lin.weight = *w;
  const auto& wt = *w->value;
  if (conv) {
    if (wt.dims_size() < 3) return std::nullopt;
    lin.channels = WeightLayoutOf(n, wt).out_channels;
    lin.output_rank = wt.dims_size();
  } else {
    if (wt.dims_size() != 2) return std::nullopt;
    lin.channels = WeightLayoutOf(n, wt).out_channels;
    lin.output_rank = 2;
    // A beta other than 1 would have to be folded into C too; exporters write 1.
    if (n.input_size() >= 3 && !n.input(2).empty() && FloatAttribute(n, "beta", 1.0f) != 1.0f) return std::nullopt;
  }
  if (n.input_size() >= 3 && !n.input(2).empty()) {
    auto b = FindConstant(g, n.input(2));
    if (!b) return std::nullopt;
    // Conv's B is [C]; Gemm's C must broadcast along N only ([N], [1, N] or one value).
    if (!ChannelValues(*b->value, conv ? 1 : 2, conv ? 0 : 1, lin.channels)) return std::nullopt;
    lin.bias = *b;
  }
  return lin;
}

struct ChannelAffine {
  std::vector<double> scale, shift;
};

// Node i (a BatchNormalization or a Mul/Add by a constant) read from a foldable linear node:
// that node and the per-channel scale and shift node i applies.
std::optional<std::pair<LinearNode, ChannelAffine>> Match(const GraphIndex& g, int i, LinearFold kind, bool values,
                                                          const std::set<std::string>* matrices) {
  const auto& n = g.node(i);
  if (!n.domain().empty() || n.output_size() < 1) return std::nullopt;
  if (kind == LinearFold::kBatchNorm) {
    if (n.op_type() != "BatchNormalization" || n.input_size() != 5) return std::nullopt;
    for (int k = 1; k < n.output_size(); ++k) {
      if (!n.output(k).empty()) return std::nullopt;  // training outputs
    }
    if (IntAttribute(n, "training_mode", 0) != 0 || IntAttribute(n, "spatial", 1) != 1) return std::nullopt;
    const int p = g.Producer(n.input(0));
    if (p < 0) return std::nullopt;
    auto lin = FoldableLinear(g, p, matrices);
    if (!lin) return std::nullopt;
    std::vector<const onnx::TensorProto*> c;
    for (int k = 1; k <= 4; ++k) {
      auto s = FindConstant(g, n.input(k));
      if (!s) return std::nullopt;
      int64_t count = 1;
      for (int64_t d : s->value->dims()) count *= d;
      if (count != lin->channels) return std::nullopt;
      c.push_back(s->value);
    }
    if (!values) return std::make_pair(*lin, ChannelAffine{});
    const auto gamma = TensorToFloats(*c[0]), beta = TensorToFloats(*c[1]);
    const auto mean = TensorToFloats(*c[2]), var = TensorToFloats(*c[3]);
    const double eps = FloatAttribute(n, "epsilon", 1e-5f);
    ChannelAffine a;
    for (int64_t k = 0; k < lin->channels; ++k) {
      const double s = gamma[k] / std::sqrt(static_cast<double>(var[k]) + eps);
      a.scale.push_back(s);
      a.shift.push_back(beta[k] - s * mean[k]);
    }
    return std::make_pair(*lin, a);
  }
  if ((n.op_type() != "Mul" && n.op_type() != "Add") || n.input_size() != 2 || n.output_size() != 1) {
    return std::nullopt;
  }
  for (int side = 0; side < 2; ++side) {
    const int p = g.Producer(n.input(side));
    if (p < 0) continue;
    auto lin = FoldableLinear(g, p, nullptr);  // MatMul + Add stays as exported (2-D or not)
    auto k = FindConstant(g, n.input(1 - side));
    if (!lin || !k) continue;
    auto per_channel = ChannelValues(*k->value, lin->output_rank, 1, lin->channels);
    if (!per_channel) continue;
    ChannelAffine a;
    if (n.op_type() == "Mul") {
      a.scale = *per_channel;
      a.shift.assign(per_channel->size(), 0.0);
    } else {
      a.scale.assign(per_channel->size(), 1.0);
      a.shift = *per_channel;
    }
    return std::make_pair(*lin, a);
  }
  return std::nullopt;
}

// The output channel of each element of the weight.
std::vector<int64_t> WeightChannels(const onnx::NodeProto& n, const onnx::TensorProto& w, int64_t channels) {
  std::vector<int64_t> dims(w.dims().begin(), w.dims().end());
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  std::vector<int64_t> ch(static_cast<size_t>(count));
  if (n.op_type() == "Conv") {
    const int64_t inner = count / dims[0];
    for (int64_t i = 0; i < count; ++i) ch[i] = i / inner;
  } else if (n.op_type() == "ConvTranspose") {
    // [C_in, C_out / group, k...]: input channel ci is in group ci / (C_in / group).
    const int64_t group = channels / dims[1];
    const int64_t per_group_in = dims[0] / group;
    const int64_t inner = count / (dims[0] * dims[1]);
    for (int64_t i = 0; i < count; ++i) {
      const int64_t j = (i / inner) % dims[1];
      const int64_t ci = i / (inner * dims[1]);
      ch[i] = (ci / per_group_in) * dims[1] + j;
    }
  } else {  // Gemm: [N, K] with transB, else [K, N] (MatMul too)
    const bool rows = WeightLayoutOf(n, dims).out_axis == 0;
    for (int64_t i = 0; i < count; ++i) ch[i] = rows ? i / dims[1] : i % dims[1];
  }
  return ch;
}

void Apply(onnx::GraphProto* graph, const GraphIndex& g, int folded, const LinearNode& lin, const ChannelAffine& a) {
  GraphEditor editor(graph);
  const onnx::NodeProto& node = g.node(lin.node);
  const std::vector<float> w = TensorToFloats(*lin.weight.value);
  const std::vector<int64_t> channel = WeightChannels(node, *lin.weight.value, lin.channels);
  std::vector<double> w2(w.size());
  for (size_t i = 0; i < w.size(); ++i) w2[i] = a.scale[channel[i]] * w[i];
  std::vector<double> b2(a.shift);
  if (lin.bias) {
    const bool conv = node.op_type() != "Gemm";
    const auto b = *ChannelValues(*lin.bias->value, conv ? 1 : 2, conv ? 0 : 1, lin.channels);
    for (int64_t c = 0; c < lin.channels; ++c) b2[c] += a.scale[c] * b[c];
  }
  const std::vector<int64_t> wdims(lin.weight.value->dims().begin(), lin.weight.value->dims().end());
  const std::string base = node.name().empty() ? node.output(0) : node.name();
  const std::string wname = AddValues(&editor, base + "_weight_folded", lin.weight.type, wdims, w2);
  const std::string bname = AddValues(&editor, base + "_bias_folded", lin.weight.type, {lin.channels}, b2);
  const std::string old_output = node.output(0);
  std::set<std::string> replaced = {lin.weight.root, node.input(1)};
  if (lin.bias) replaced.insert({lin.bias->root, node.input(2)});
  const auto& f = g.node(folded);
  for (const auto& in : f.input()) {
    if (in != old_output) replaced.insert(in);
  }
  std::vector<int> chain = lin.weight.chain;
  if (lin.bias) chain.insert(chain.end(), lin.bias->chain.begin(), lin.bias->chain.end());
  for (int k = 1; k < f.input_size(); ++k) {
    if (auto s = FindConstant(g, f.input(k))) chain.insert(chain.end(), s->chain.begin(), s->chain.end());
  }
  if (f.op_type() != "BatchNormalization" && f.input(0) != old_output) {
    if (auto s = FindConstant(g, f.input(0))) chain.insert(chain.end(), s->chain.begin(), s->chain.end());
  }

  onnx::NodeProto* m = graph->mutable_node(lin.node);
  if (m->op_type() == "MatMul") m->set_op_type("Gemm");  // a matrix times a matrix, plus the folded bias
  m->set_input(1, wname);
  while (m->input_size() < 3) m->add_input("");
  m->set_input(2, bname);
  if (m->op_type() == "Gemm") {
    for (auto& attr : *m->mutable_attribute()) {
      if (attr.name() == "beta") attr.set_f(1.0f);
    }
  }
  m->set_output(0, f.output(0));
  std::vector<int> dead = {folded};
  // Identity/Cast nodes between a replaced constant and its readers, once nothing reads them.
  const std::set<int> chain_nodes(chain.begin(), chain.end());
  std::set<std::string> still_read;
  for (int i = 0; i < graph->node_size(); ++i) {
    if (i == folded || chain_nodes.count(i)) continue;
    for (const auto& in : graph->node(i).input()) still_read.insert(in);
  }
  for (int c : chain_nodes) {
    const std::string& out = graph->node(c).output(0);
    if (!still_read.count(out) && !g.IsGraphOutput(out)) {
      dead.push_back(c);
      replaced.insert(graph->node(c).input(0));
    }
  }
  RemoveNodes(graph, dead);
  auto* infos = graph->mutable_value_info();
  for (int k = infos->size() - 1; k >= 0; --k) {
    if (infos->Get(k).name() == old_output) infos->DeleteSubrange(k, 1);
  }
  GraphEditor(graph).RemoveUnread(replaced);
}

}  // namespace

bool BatchNormAfterMatMul(const onnx::GraphProto& graph) {
  const GraphIndex g(graph);
  for (int i = 0; i < g.num_nodes(); ++i) {
    const auto& n = g.node(i);
    if (n.op_type() != "BatchNormalization" || !n.domain().empty() || n.input_size() == 0) continue;
    const int p = g.Producer(n.input(0));
    if (p >= 0 && g.node(p).op_type() == "MatMul" && g.node(p).domain().empty()) return true;
  }
  return false;
}

std::set<std::string> MatrixTensors(const onnx::GraphProto& graph) {
  std::set<std::string> out;
  for (const auto* values : {&graph.input(), &graph.value_info(), &graph.output()}) {
    for (const auto& v : *values) {
      if (v.type().has_tensor_type() && v.type().tensor_type().has_shape() &&
          v.type().tensor_type().shape().dim_size() == 2) {
        out.insert(v.name());
      }
    }
  }
  return out;
}

bool HasLinearFold(const onnx::GraphProto& graph, LinearFold kind, const std::set<std::string>& matrices) {
  const GraphIndex g(graph);
  for (int i = 0; i < g.num_nodes(); ++i) {
    if (Match(g, i, kind, false, &matrices)) return true;
  }
  return false;
}

bool FoldOneLinear(onnx::GraphProto* graph, LinearFold kind, const std::set<std::string>& matrices) {
  const GraphIndex g(*graph);
  for (int i = 0; i < g.num_nodes(); ++i) {
    auto m = Match(g, i, kind, true, &matrices);
    if (!m) continue;
    Apply(graph, g, i, m->first, m->second);
    return true;
  }
  return false;
}

}  // namespace ptqkit::canon
