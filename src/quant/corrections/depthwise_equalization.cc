#include "quant/corrections/depthwise_equalization.h"

#include <algorithm>
#include <set>

#include "canon/channel_constants.h"
#include "onnx/graph_editor.h"
#include "onnx/op_traits.h"

namespace ptqkit {
namespace {

// A Pad of mode constant (the default): it only adds its constant around the input.
bool IsConstantPad(const onnx::NodeProto& n) {
  if (!HasFlag(n, OpFlag::kPadsBorder)) return false;
  for (const auto& a : n.attribute()) {
    if (a.name() == "mode") return a.s() == "constant";
  }
  return true;
}

// A constant Pad whose value is 0: it commutes with a per-channel gain.
bool IsZeroPad(const GraphIndex& index, const onnx::NodeProto& pad) {
  if (!IsConstantPad(pad)) return false;
  for (const auto& a : pad.attribute()) {
    if (a.name() == "value" && a.f() != 0.0f) return false;  // opset < 11
  }
  if (pad.input_size() < 3 || pad.input(2).empty()) return true;
  const onnx::TensorProto* v = index.Constant(pad.input(2));
  if (v == nullptr || v->data_type() != onnx::TensorProto::FLOAT) return false;
  const std::vector<float> values = TensorToFloats(*v);
  return values.size() == 1 && values[0] == 0.0f;
}

// A weight's values with output channel c (its first axis) multiplied by gain[c] (divided by it
// when `divide`).
std::vector<double> ScaledPerOutputChannel(const onnx::TensorProto& weight, const std::vector<double>& gain,
                                           bool divide) {
  const std::vector<float> values = TensorToFloats(weight);
  const size_t per_channel = values.size() / gain.size();
  std::vector<double> scaled(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    const double g = gain[i / per_channel];
    scaled[i] = divide ? values[i] / g : values[i] * g;
  }
  return scaled;
}

}  // namespace

bool CappedByItsProducer(const GraphIndex& index, std::string tensor) {
  for (int hops = 0; hops < 8; ++hops) {
    const int p = index.Producer(tensor);
    if (p < 0) return false;
    const onnx::NodeProto& n = index.node(p);
    if (!n.domain().empty() || n.input_size() == 0) return false;
    const OpTraits& traits = TraitsOf(n);
    if (traits.Has(OpFlag::kNoOp) || IsConstantPad(n)) {
      tensor = n.input(0);  // a pad adds no value beyond the cap
      continue;
    }
    if (traits.Has(OpFlag::kUnitInterval)) return true;
    if (!traits.Has(OpFlag::kClampsToBounds)) return false;
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
      if (TraitsOf(n).weight_layout != WeightLayoutKind::kConv || u.input != 0 || n.input_size() < 2) continue;
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

int FoldableProducerConv(const GraphIndex& index, const std::string& tensor) {
  const auto only_reader = [&](const std::string& t) {
    return !index.IsGraphOutput(t) && index.Consumers(t).size() == 1;
  };
  std::string t = tensor;
  bool relu_seen = false, pad_seen = false;
  for (int hops = 0; hops < 3; ++hops) {
    if (!only_reader(t)) return -1;
    const int p = index.Producer(t);
    if (p < 0) return -1;
    const onnx::NodeProto& n = index.node(p);
    if (!n.domain().empty() || n.input_size() == 0 || n.output_size() != 1) return -1;
    if (!pad_seen && !relu_seen && IsZeroPad(index, n)) {
      pad_seen = true;
    } else if (HasFlag(n, OpFlag::kRectifies) && !relu_seen) {
      relu_seen = true;
    } else if (TraitsOf(n).weight_layout == WeightLayoutKind::kConv && n.input_size() >= 2) {
      const auto w = canon::FindConstant(index, n.input(1));
      if (!w || w->value->dims_size() < 3) return -1;
      if (n.input_size() > 2 && !n.input(2).empty()) {
        const auto b = canon::FindConstant(index, n.input(2));
        if (!b || b->value->dims_size() != 1 || b->value->dims(0) != w->value->dims(0)) return -1;
      }
      return p;
    } else {
      return -1;
    }
    t = n.input(0);
  }
  return -1;
}

namespace {

// Output channel c of `conv`'s weight and bias times g_c (new initializers; the old ones are
// removed by the caller once unread).
void ScaleOutputChannels(onnx::GraphProto* graph, GraphEditor* editor, const GraphIndex& index, int conv,
                         const std::vector<double>& gains, std::set<std::string>* replaced) {
  const onnx::NodeProto& n = index.node(conv);
  const auto w = canon::FindConstant(index, n.input(1));
  const std::vector<int64_t> wdims(w->value->dims().begin(), w->value->dims().end());
  const std::string weight = canon::AddValues(editor, n.input(1) + "_equalized", w->type, wdims,
                                              ScaledPerOutputChannel(*w->value, gains, false));
  std::string bias;
  if (n.input_size() > 2 && !n.input(2).empty()) {
    const auto b = canon::FindConstant(index, n.input(2));
    bias = canon::AddValues(editor, n.input(2) + "_equalized", b->type, {static_cast<int64_t>(gains.size())},
                            ScaledPerOutputChannel(*b->value, gains, false));
    replaced->insert(n.input(2));
  }
  replaced->insert(n.input(1));
  onnx::NodeProto* m = graph->mutable_node(conv);
  m->set_input(1, weight);
  if (!bias.empty()) m->set_input(2, bias);
}

}  // namespace

int EqualizeDepthwiseInputs(onnx::GraphProto* graph, const GraphIndex& index, const std::vector<DepthwiseSite>& sites,
                            const std::map<std::string, std::vector<float>>& channel_amax) {
  GraphEditor editor(graph);
  std::set<std::string> replaced;
  int done = 0;
  // A Conv's weights are rewritten once, from the index's values: a producer that is itself a site
  // (or already scaled for another) keeps the Mul form.
  std::set<int> rewritten;
  for (const auto& site : sites) rewritten.insert(site.conv);
  for (const auto& site : sites) {
    const onnx::NodeProto& conv = index.node(site.conv);
    const auto amax = channel_amax.find(site.input);
    const auto w = canon::FindConstant(index, conv.input(1));
    if (amax == channel_amax.end() || !w || static_cast<int64_t>(amax->second.size()) != w->value->dims(0)) continue;
    const std::vector<double> gains = DepthwiseGains(amax->second);
    // Channel c of the weights / g_c; the input edge (or the producing Conv) gets x * g.
    const int64_t channels = w->value->dims(0);
    const std::vector<int64_t> wdims(w->value->dims().begin(), w->value->dims().end());
    const std::string weight = canon::AddValues(&editor, conv.input(1) + "_equalized", w->type, wdims,
                                                ScaledPerOutputChannel(*w->value, gains, true));
    replaced.insert(conv.input(1));
    const int producer = FoldableProducerConv(index, site.input);
    if (producer >= 0 && !rewritten.count(producer) &&
        canon::FindConstant(index, index.node(producer).input(1))->value->dims(0) == channels) {
      rewritten.insert(producer);
      // Cross-layer form: Relu and a zero Pad commute with a positive per-channel gain, so the gain
      // goes into the producing Conv's output channels and no node is added.
      ScaleOutputChannels(graph, &editor, index, producer, gains, &replaced);
    } else {
      std::vector<int64_t> gdims(wdims.size(), 1);
      gdims[1] = channels;
      const std::string gain = canon::AddValues(&editor, conv.name() + "_input_gain", w->type, gdims, gains);
      const std::string equalized = editor.Fresh(site.input + "_equalized");
      editor.InsertBefore(site.conv, GraphEditor::MakeNode("Mul", editor.Fresh(conv.name() + "_equalize"),
                                                           {site.input, gain}, equalized));
      graph->mutable_node(site.conv)->set_input(0, equalized);
    }
    graph->mutable_node(site.conv)->set_input(1, weight);
    ++done;
  }
  editor.Splice();
  editor.RemoveUnread(replaced);
  return done;
}

}  // namespace ptqkit
