#include "quant/depthwise_equalization.h"

#include <algorithm>
#include <set>

#include "canon/channel_constants.h"
#include "onnx/graph_editor.h"

namespace ptqkit {

bool CappedByItsProducer(const GraphIndex& index, std::string tensor) {
  const auto constant_mode = [](const onnx::NodeProto& pad) {
    for (const auto& a : pad.attribute()) {
      if (a.name() == "mode") return a.s() == "constant";
    }
    return true;
  };
  for (int hops = 0; hops < 8; ++hops) {
    const int p = index.Producer(tensor);
    if (p < 0) return false;
    const onnx::NodeProto& n = index.node(p);
    if (!n.domain().empty() || n.input_size() == 0) return false;
    const std::string& op = n.op_type();
    if (op == "Identity" || (op == "Pad" && constant_mode(n))) {
      tensor = n.input(0);  // a zero pad adds no value beyond the cap
      continue;
    }
    if (op == "Sigmoid" || op == "HardSigmoid") return true;
    if (op != "Clip") return false;
    if (n.input_size() > 2 && !n.input(2).empty()) return index.Constant(n.input(2)) != nullptr;
    for (const auto& a : n.attribute()) {
      if (a.name() == "max") return true;  // opset < 11
    }
    return false;
  }
  return false;
}

std::vector<DepthwiseSite> FindDepthwiseSites(const GraphIndex& index, const Placement& plan) {
  std::vector<DepthwiseSite> sites;
  for (const auto& q : plan.tensors) {
    if (q.is_weight) continue;
    for (const auto& u : q.uses) {
      const auto& n = index.node(u.node);
      if (n.op_type() != "Conv" || !n.domain().empty() || u.input != 0 || n.input_size() < 2) continue;
      const auto w = canon::FindConstant(index, n.input(1));
      if (!w || !w->chain.empty() || w->value->dims_size() < 3 || w->value->dims(1) != 1) continue;
      if (IntAttribute(n, "group", 1) != w->value->dims(0)) continue;  // depthwise: one input channel a group
      if (CappedByItsProducer(index, q.tensor)) continue;
      sites.push_back({u.node, q.tensor});
    }
  }
  return sites;
}

std::vector<double> DepthwiseGains(const std::vector<float>& channel_amax) {
  double top = 0.0;
  for (float a : channel_amax) top = std::max(top, static_cast<double>(a));
  std::vector<double> gains(channel_amax.size(), 1.0);
  if (top <= 0.0) return gains;
  for (size_t c = 0; c < gains.size(); ++c) {
    gains[c] = top / std::max(static_cast<double>(channel_amax[c]), top / kMaxDepthwiseGain);
  }
  return gains;
}

int EqualizeDepthwiseInputs(onnx::GraphProto* graph, const GraphIndex& index, const std::vector<DepthwiseSite>& sites,
                            const std::map<std::string, std::vector<float>>& channel_amax) {
  GraphEditor editor(graph);
  std::set<std::string> replaced;
  int done = 0;
  for (const auto& site : sites) {
    const onnx::NodeProto& conv = index.node(site.conv);
    const auto amax = channel_amax.find(site.input);
    const auto w = canon::FindConstant(index, conv.input(1));
    if (amax == channel_amax.end() || !w || static_cast<int64_t>(amax->second.size()) != w->value->dims(0)) continue;
    const std::vector<double> gains = DepthwiseGains(amax->second);
    // Channel c of the weights / g_c; the input edge gets x * g (shape [1, C, 1, ...]).
    const std::vector<float> values = TensorToFloats(*w->value);
    const int64_t channels = w->value->dims(0);
    const size_t per_channel = values.size() / static_cast<size_t>(channels);
    std::vector<double> scaled(values.size());
    for (size_t i = 0; i < values.size(); ++i) scaled[i] = values[i] / gains[i / per_channel];
    const std::vector<int64_t> wdims(w->value->dims().begin(), w->value->dims().end());
    const std::string weight = canon::AddValues(&editor, conv.input(1) + "_equalized", w->type, wdims, scaled);
    std::vector<int64_t> gdims(wdims.size(), 1);
    gdims[1] = channels;
    const std::string gain = canon::AddValues(&editor, conv.name() + "_input_gain", w->type, gdims, gains);
    const std::string equalized = editor.Fresh(site.input + "_equalized");
    editor.InsertBefore(site.conv, GraphEditor::MakeNode("Mul", editor.Fresh(conv.name() + "_equalize"),
                                                         {site.input, gain}, equalized));
    replaced.insert(conv.input(1));
    onnx::NodeProto* m = graph->mutable_node(site.conv);
    m->set_input(0, equalized);
    m->set_input(1, weight);
    ++done;
  }
  editor.Splice();
  editor.RemoveUnread(replaced);
  return done;
}

}  // namespace ptqkit
