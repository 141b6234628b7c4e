#include "quant/placement/graph_patterns.h"

#include <set>

#include "onnx/op_traits.h"

namespace ptqkit {
namespace {

bool SoleConsumer(const GraphIndex& graph, const std::string& tensor) {
  return graph.Consumers(tensor).size() == 1 && !graph.IsGraphOutput(tensor);
}

}  // namespace

int ConvGroupSource(const GraphIndex& graph, const std::string& tensor, bool through_activations) {
  std::string t = tensor;
  for (int steps = 0; steps < 8; ++steps) {
    const int p = graph.Producer(t);
    if (p < 0) return -1;
    const auto& n = graph.node(p);
    if (IsConvolution(n)) return p;
    const bool passable =
        HasFlag(n, OpFlag::kFoldsIntoConv) || (through_activations && HasFlag(n, OpFlag::kConvActivation));
    if (!passable || n.input_size() == 0 || !SoleConsumer(graph, n.input(0))) return -1;
    t = n.input(0);
  }
  return -1;
}

int ConvSourceThroughLayout(const GraphIndex& graph, const std::string& tensor) {
  std::string t = tensor;
  for (int steps = 0; steps < 8; ++steps) {
    const int p = graph.Producer(t);
    if (p < 0 || !HasFlag(graph.node(p), OpFlag::kReshapes)) break;
    t = graph.node(p).input(0);
  }
  return ConvGroupSource(graph, t, true);
}

bool IsAttentionMatMul(const GraphIndex& graph, int node) {
  const auto& n = graph.node(node);
  if (TraitsOf(std::string_view(n.op_type())).weight_layout != WeightLayoutKind::kMatMul) return false;
  // Q·K^T side: the output reaches a Softmax through scaling / masking ops.
  std::string t = n.output(0);
  for (int steps = 0; steps < 6; ++steps) {
    const auto& uses = graph.Consumers(t);
    if (uses.size() != 1) break;
    const auto& c = graph.node(uses[0].node);
    if (HasRole(c, OpRole::kSoftmax)) return true;
    static const std::set<std::string> kBetween = {"Mul", "Div", "Add", "Where", "Cast", "Reshape"};
    if (!kBetween.count(c.op_type())) break;
    t = c.output(0);
  }
  // Softmax·V side: an input comes from a Softmax, possibly through a Cast, Dropout or reshape.
  for (const auto& input : n.input()) {
    std::string s = input;
    for (int steps = 0; steps < 4; ++steps) {
      const int p = graph.Producer(s);
      if (p < 0) break;
      const auto& pn = graph.node(p);
      if (HasRole(pn, OpRole::kSoftmax)) return true;
      static const std::set<std::string> kPass = {"Cast", "Dropout", "Reshape", "Transpose"};
      if (!kPass.count(pn.op_type())) break;
      s = pn.input(0);
    }
  }
  return false;
}

bool IsExportedGeluTail(const GraphIndex& graph, int mul) {
  const auto& n = graph.node(mul);
  if (n.op_type() != "Mul" || n.input_size() != 2) return false;
  const auto produced_by = [&](const std::string& t, const char* op) {
    const int p = graph.Producer(t);
    return p >= 0 && graph.node(p).op_type() == op ? p : -1;
  };
  for (const auto& in : n.input()) {
    const int inner = produced_by(in, "Mul");
    if (inner < 0) continue;
    for (const auto& t : graph.node(inner).input()) {
      const int add = produced_by(t, "Add");
      if (add < 0) continue;
      for (const auto& a : graph.node(add).input()) {
        if (produced_by(a, "Erf") >= 0) return true;
      }
    }
  }
  return false;
}

std::pair<int64_t, int64_t> GemmDims(const GraphIndex& graph, int node) {
  const auto& n = graph.node(node);
  const auto* w = n.input_size() < 2 ? nullptr : graph.Constant(n.input(1));
  if (!w) return {-1, -1};
  const WeightLayout layout = WeightLayoutOf(n, *w);
  return {layout.in_channels, layout.out_channels};
}

}  // namespace ptqkit
