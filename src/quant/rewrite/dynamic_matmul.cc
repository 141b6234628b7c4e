#include "quant/rewrite/dynamic_matmul.h"

#include <map>
#include <vector>

#include "onnx/graph_editor.h"
#include "onnx/graph_index.h"
#include "onnx/op_traits.h"

namespace ptqkit {
namespace {

const onnx::NodeProto* ProducerOfType(const GraphIndex& g, const std::string& tensor, const char* op) {
  const int p = g.Producer(tensor);
  if (p < 0 || g.node(p).op_type() != op || !g.node(p).domain().empty()) return nullptr;
  return &g.node(p);
}

bool HasAttribute(const onnx::NodeProto& n, const char* name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return true;
  }
  return false;
}

// The input A of a MatMul: the float tensor a per-tensor UINT8 Q -> DQ pair quantizes, or "".
std::string DynamicCandidate(const GraphIndex& g, const std::string& a) {
  const onnx::NodeProto* dq = ProducerOfType(g, a, "DequantizeLinear");
  if (dq == nullptr || dq->input_size() != 3 || HasAttribute(*dq, "axis")) return "";
  const onnx::TensorProto* zp = g.Constant(dq->input(2));
  if (zp == nullptr || zp->data_type() != onnx::TensorProto::UINT8 || zp->dims_size() != 0) return "";
  const onnx::NodeProto* q = ProducerOfType(g, dq->input(0), "QuantizeLinear");
  return q == nullptr ? "" : q->input(0);
}

// Input B: the DequantizeLinear of a constant rank-2 INT8 weight, per tensor or per column.
const onnx::NodeProto* IntegerWeight(const GraphIndex& g, const std::string& b) {
  const onnx::NodeProto* dq = ProducerOfType(g, b, "DequantizeLinear");
  if (dq == nullptr || dq->input_size() < 2) return nullptr;
  const onnx::TensorProto* w = g.Constant(dq->input(0));
  const onnx::TensorProto* scale = g.Constant(dq->input(1));
  if (w == nullptr || scale == nullptr || w->data_type() != onnx::TensorProto::INT8 || w->dims_size() != 2) return nullptr;
  const bool per_column = scale->dims_size() == 1 && scale->dims(0) == w->dims(1) && IntAttribute(*dq, "axis", 1) == 1;
  return scale->dims_size() == 0 || per_column ? dq : nullptr;
}

bool ReadByQuantizeLinear(const GraphIndex& g, const std::string& tensor) {
  for (const auto& use : g.Consumers(tensor)) {
    if (HasRole(g.node(use.node), OpRole::kQuantize)) return true;
  }
  return false;
}

// A bias Add reading `output` gets its constant as input 1 (the order ONNX Runtime folds).
void PutBiasSecond(const GraphIndex& g, onnx::GraphProto* graph, const std::string& output) {
  const auto& uses = g.Consumers(output);
  if (uses.size() != 1 || uses[0].input != 1) return;
  onnx::NodeProto* add = graph->mutable_node(uses[0].node);
  if (add->op_type() != "Add" || add->input_size() != 2 || !g.IsConstant(add->input(0))) return;
  add->mutable_input()->SwapElements(0, 1);
}

// Removes Q/DQ nodes whose outputs nothing reads, then the initializers only they read.
void RemoveDeadQdq(onnx::GraphProto* graph, const std::set<std::string>* reserved) {
  std::set<std::string> inputs_of_removed;
  for (bool removed = true; removed;) {
    removed = false;
    const GraphIndex g(*graph);
    google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
    for (int i = 0; i < graph->node_size(); ++i) {
      const auto& n = graph->node(i);
      const bool qdq = IsQdqOp(n);
      const bool dead = qdq && g.Consumers(n.output(0)).empty() && !g.IsGraphOutput(n.output(0));
      if (dead) {
        inputs_of_removed.insert(n.input().begin(), n.input().end());
        removed = true;
      } else {
        kept.Add()->Swap(graph->mutable_node(i));
      }
    }
    graph->mutable_node()->Swap(&kept);
  }
  GraphEditor(graph, reserved).RemoveUnread(inputs_of_removed);
}

}  // namespace

int WriteDynamicMatMuls(onnx::GraphProto* graph, const std::set<std::string>* reserved) {
  const GraphIndex g(*graph);
  GraphEditor editor(graph, reserved);
  std::map<std::string, std::vector<std::string>> dynamic;  // float input -> (xq, xs, xzp)
  int rewritten = 0;
  for (int i = 0; i < g.num_nodes(); ++i) {
    const onnx::NodeProto& mm = g.node(i);
    if (TraitsOf(mm).weight_layout != WeightLayoutKind::kMatMul || mm.input_size() != 2) continue;
    const std::string x = DynamicCandidate(g, mm.input(0));
    const onnx::NodeProto* weight = IntegerWeight(g, mm.input(1));
    if (x.empty() || weight == nullptr || ReadByQuantizeLinear(g, mm.output(0))) continue;
    auto [it, fresh] = dynamic.emplace(x, std::vector<std::string>{});
    if (fresh) {
      onnx::NodeProto dql = GraphEditor::MakeNode("DynamicQuantizeLinear", editor.Fresh(x + "_DynamicQuantizeLinear"),
                                                  {x}, editor.Fresh(x + "_quantized"));
      it->second = {dql.output(0), editor.Fresh(x + "_scale"), editor.Fresh(x + "_zero_point")};
      dql.add_output(it->second[1]);
      dql.add_output(it->second[2]);
      editor.InsertBefore(i, std::move(dql));
    }
    const std::vector<std::string>& xq = it->second;
    const std::string& out = mm.output(0);
    std::vector<std::string> mi_inputs = {xq[0], weight->input(0), xq[2]};
    if (weight->input_size() > 2) mi_inputs.push_back(weight->input(2));
    const std::string product = editor.Fresh(out + "_MatMulInteger_Output");
    const std::string as_float = editor.Fresh(out + "_Cast_Output");
    const std::string scale = editor.Fresh(out + "_scale");
    editor.InsertBefore(i, GraphEditor::MakeNode("MatMulInteger", editor.Fresh(mm.name() + "_MatMulInteger"), mi_inputs,
                                                 product));
    editor.InsertBefore(i, GraphEditor::MakeNode("Cast", editor.Fresh(mm.name() + "_Cast"), {product}, as_float,
                                                 {{"to", onnx::TensorProto::FLOAT}}));
    editor.InsertBefore(i, GraphEditor::MakeNode("Mul", editor.Fresh(mm.name() + "_scale"), {xq[1], weight->input(1)},
                                                 scale));
    // The MatMul itself becomes the last Mul: same name and output, so its readers are untouched.
    onnx::NodeProto* node = graph->mutable_node(i);
    node->set_op_type("Mul");
    node->clear_attribute();
    node->set_input(0, as_float);
    node->set_input(1, scale);
    PutBiasSecond(g, graph, out);
    ++rewritten;
  }
  if (rewritten == 0) return 0;
  editor.Splice();
  RemoveDeadQdq(graph, reserved);
  return rewritten;
}

}  // namespace ptqkit
