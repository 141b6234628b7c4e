#include "quant/graph_patterns.h"

#include <set>

namespace ptqkit {
namespace {

const std::set<std::string> kActivations = {"Relu", "LeakyRelu", "Clip", "Sigmoid", "HardSigmoid", "HardSwish",
                                            "Tanh", "Elu", "Selu", "Softplus", "PRelu"};
const std::set<std::string> kLayout = {"Reshape", "Transpose", "Flatten", "Squeeze", "Unsqueeze"};

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
    if (n.op_type() == "Conv" || n.op_type() == "ConvTranspose") return p;
    const bool passable = n.op_type() == "BatchNormalization" || (through_activations && kActivations.count(n.op_type()));
    if (!passable || n.input_size() == 0 || !SoleConsumer(graph, n.input(0))) return -1;
    t = n.input(0);
  }
  return -1;
}

int ConvSourceThroughLayout(const GraphIndex& graph, const std::string& tensor) {
  std::string t = tensor;
  for (int steps = 0; steps < 8; ++steps) {
    const int p = graph.Producer(t);
    if (p < 0 || !kLayout.count(graph.node(p).op_type())) break;
    t = graph.node(p).input(0);
  }
  return ConvGroupSource(graph, t, true);
}

bool IsAttentionMatMul(const GraphIndex& graph, int node) {
  const auto& n = graph.node(node);
  if (n.op_type() != "MatMul") return false;
  // Q·K^T side: the output reaches a Softmax through scaling / masking ops.
  std::string t = n.output(0);
  for (int steps = 0; steps < 6; ++steps) {
    const auto& uses = graph.Consumers(t);
    if (uses.size() != 1) break;
    const auto& c = graph.node(uses[0].node);
    if (c.op_type() == "Softmax") return true;
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
      if (pn.op_type() == "Softmax") return true;
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
  if (n.input_size() < 2) return {-1, -1};
  const auto* w = graph.Constant(n.input(1));
  if (!w || w->dims_size() < 2) return {-1, -1};
  const int r = w->dims_size();
  if (n.op_type() == "Gemm" && IntAttribute(n, "transB", 0)) return {w->dims(1), w->dims(0)};
  return {w->dims(r - 2), w->dims(r - 1)};
}

std::pair<int64_t, int64_t> ConvChannels(const GraphIndex& graph, int node) {
  const auto& n = graph.node(node);
  if (n.input_size() < 2) return {-1, -1};
  const auto* w = graph.Constant(n.input(1));
  if (!w || w->dims_size() < 2) return {-1, -1};
  const int64_t group = IntAttribute(n, "group", 1);
  if (n.op_type() == "ConvTranspose") return {w->dims(0), w->dims(1) * group};
  return {w->dims(1) * group, w->dims(0)};
}

}  // namespace ptqkit
