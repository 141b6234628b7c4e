#include "canon/pad_fold.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "canon/channel_constants.h"
#include "onnx/graph_index.h"

namespace ptqkit::canon {
namespace {

// The values of an INT64 constant (raw or typed storage), or nullopt.
std::optional<std::vector<int64_t>> Int64Values(const onnx::TensorProto* t) {
  if (t == nullptr || t->data_type() != onnx::TensorProto::INT64 || t->has_data_location()) return std::nullopt;
  if (!t->raw_data().empty()) {
    if (t->raw_data().size() % sizeof(int64_t) != 0) return std::nullopt;
    std::vector<int64_t> v(t->raw_data().size() / sizeof(int64_t));
    std::memcpy(v.data(), t->raw_data().data(), t->raw_data().size());
    return v;
  }
  return std::vector<int64_t>(t->int64_data().begin(), t->int64_data().end());
}

// Whether a Pad's constant value is absent or zero.
bool PadsWithZeros(const GraphIndex& g, const onnx::NodeProto& pad) {
  if (pad.input_size() > 2 && !pad.input(2).empty()) {
    const onnx::TensorProto* value = g.Constant(pad.input(2));
    if (value == nullptr || ElementCount(*value) != 1) return false;
    if (value->data_type() != onnx::TensorProto::FLOAT && value->data_type() != onnx::TensorProto::FLOAT16) return false;
    return TensorToFloats(*value).front() == 0.0f;
  }
  return FloatAttribute(pad, "value", 0.0f) == 0.0f;  // before opset 11: an attribute
}

// The spatial pads of a foldable Pad as [begin..., end...] of the Conv's rank - 2 dims, or nullopt.
std::optional<std::vector<int64_t>> SpatialPads(const GraphIndex& g, const onnx::NodeProto& pad) {
  for (const auto& a : pad.attribute()) {
    if (a.name() == "mode" && a.s() != "constant") return std::nullopt;
  }
  if (pad.input_size() > 3 && !pad.input(3).empty()) return std::nullopt;  // `axes` (opset 18)
  if (!PadsWithZeros(g, pad)) return std::nullopt;
  std::optional<std::vector<int64_t>> pads;
  if (pad.input_size() > 1 && !pad.input(1).empty()) {
    pads = Int64Values(g.Constant(pad.input(1)));
  } else {
    for (const auto& a : pad.attribute()) {
      if (a.name() == "pads") pads = std::vector<int64_t>(a.ints().begin(), a.ints().end());
    }
  }
  if (!pads || pads->size() < 6 || pads->size() % 2 != 0) return std::nullopt;  // N, C and >= 1 spatial dim
  const size_t rank = pads->size() / 2;
  if ((*pads)[0] != 0 || (*pads)[1] != 0 || (*pads)[rank] != 0 || (*pads)[rank + 1] != 0) return std::nullopt;
  std::vector<int64_t> spatial;
  for (size_t d = 2; d < rank; ++d) spatial.push_back((*pads)[d]);
  for (size_t d = 2; d < rank; ++d) spatial.push_back((*pads)[rank + d]);
  for (int64_t p : spatial) {
    if (p < 0) return std::nullopt;  // a crop
  }
  return spatial;
}

struct PadMatch {
  int pad = -1;
  int conv = -1;
  std::vector<int64_t> spatial;
};

std::optional<PadMatch> FindPadFold(const onnx::GraphProto& graph) {
  const GraphIndex g(graph);
  for (int i = 0; i < g.num_nodes(); ++i) {
    const auto& pad = g.node(i);
    if (pad.op_type() != "Pad" || !pad.domain().empty() || pad.output_size() != 1) continue;
    const auto& uses = g.Consumers(pad.output(0));
    if (uses.size() != 1 || uses[0].input != 0 || g.IsGraphOutput(pad.output(0))) continue;
    const auto& conv = g.node(uses[0].node);
    if (conv.op_type() != "Conv" || !conv.domain().empty()) continue;
    bool explicit_pads = true;
    for (const auto& a : conv.attribute()) {
      if (a.name() == "auto_pad" && a.s() != "NOTSET") explicit_pads = false;
    }
    for (const auto& in : pad.input()) explicit_pads &= !g.IsGraphInput(in) || in == pad.input(0);  // overridable
    std::optional<std::vector<int64_t>> spatial = SpatialPads(g, pad);
    if (!explicit_pads || !spatial) continue;
    const auto conv_pads = std::find_if(conv.attribute().begin(), conv.attribute().end(),
                                        [](const onnx::AttributeProto& a) { return a.name() == "pads"; });
    if (conv_pads != conv.attribute().end() && static_cast<size_t>(conv_pads->ints_size()) != spatial->size()) continue;
    return PadMatch{i, uses[0].node, *spatial};
  }
  return std::nullopt;
}

}  // namespace

bool HasPadFold(const onnx::GraphProto& graph) { return FindPadFold(graph).has_value(); }

bool FoldOnePad(onnx::GraphProto* graph) {
  const std::optional<PadMatch> match = FindPadFold(*graph);
  if (!match) return false;
  onnx::NodeProto* conv = graph->mutable_node(match->conv);
  std::vector<int64_t> pads(match->spatial.size(), 0);
  onnx::AttributeProto* attribute = nullptr;
  for (auto& a : *conv->mutable_attribute()) {
    if (a.name() == "pads") attribute = &a;
  }
  if (attribute != nullptr) {  // FindPadFold checked its length
    for (size_t k = 0; k < pads.size(); ++k) pads[k] = attribute->ints(static_cast<int>(k));
  } else {
    attribute = conv->add_attribute();
    attribute->set_name("pads");
    attribute->set_type(onnx::AttributeProto::INTS);
  }
  attribute->clear_ints();
  for (size_t k = 0; k < pads.size(); ++k) attribute->add_ints(pads[k] + match->spatial[k]);
  conv->set_input(0, graph->node(match->pad).input(0));
  RemoveNodes(graph, {match->pad});
  return true;
}

}  // namespace ptqkit::canon
