// Upgrading default-domain opsets 7..12 to 13, and any older opset to 19 (FP8 needs it) or 21
// (blocked INT4 DequantizeLinear needs it).
//
// Most ops only gained types between those versions, so bumping the import is enough. The ops
// below changed meaning: attributes that became inputs are converted; ops whose old semantics
// cannot be expressed safely are refused with an error naming the node, so we never silently
// change what a model computes.
#include <fmt/format.h>

#include <map>
#include <set>
#include <string>

#include "onnx/graph_index.h"
#include "onnx/model_prep.h"
#include "ptqkit/error.h"

namespace ptqkit::onnxio {
namespace {

bool InDefaultDomain(const onnx::NodeProto& n) { return n.domain().empty() || n.domain() == "ai.onnx"; }

const onnx::AttributeProto* FindAttr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

void RemoveAttr(onnx::NodeProto* n, const std::string& name) {
  auto* attrs = n->mutable_attribute();
  for (int i = 0; i < attrs->size(); ++i) {
    if (attrs->Get(i).name() == name) {
      attrs->DeleteSubrange(i, 1);
      return;
    }
  }
}

class Upgrader {
 public:
  Upgrader(onnx::ModelProto* model, int64_t from, int64_t to) : graph_(model->mutable_graph()), from_(from), to_(to) {
    for (const auto& t : graph_->initializer()) names_.insert(t.name());
    for (const auto& n : graph_->node())
      for (const auto& o : n.output()) names_.insert(o);
    for (const auto& v : graph_->input()) {
      ranks_[v.name()] = v.type().tensor_type().has_shape() ? v.type().tensor_type().shape().dim_size() : -1;
    }
    for (const auto& v : graph_->value_info()) {
      if (v.type().tensor_type().has_shape()) ranks_[v.name()] = v.type().tensor_type().shape().dim_size();
    }
  }

  void Run() {
    for (auto& n : *graph_->mutable_node()) {
      if (!InDefaultDomain(n)) continue;
      for (const auto& a : n.attribute()) {
        if (a.has_g() || a.graphs_size() > 0) Refuse(n, "has a subgraph; upgrade of control flow is not supported");
      }
      Convert(&n);
    }
  }

 private:
  [[noreturn]] void Refuse(const onnx::NodeProto& n, const std::string& why) {
    throw Error(fmt::format("cannot upgrade the model from opset {} to {}: node '{}' ({}) {}; re-export the model at opset {} or newer",
                            from_, to_, n.name(), n.op_type(), why, to_));
  }

  // Moves an ints attribute to a new int64 initializer input at position `slot` (padding empty
  // optional inputs before it).
  void IntsAttrToInput(onnx::NodeProto* n, const std::string& attr, int slot) {
    const auto* a = FindAttr(*n, attr);
    if (!a) return;
    onnx::TensorProto t;
    t.set_name(FreshName(n->name() + "_" + attr));
    t.set_data_type(onnx::TensorProto::INT64);
    t.add_dims(a->ints_size());
    for (auto v : a->ints()) t.add_int64_data(v);
    *graph_->add_initializer() = t;
    while (n->input_size() < slot) n->add_input("");
    if (n->input_size() == slot) n->add_input(t.name());
    else n->set_input(slot, t.name());
    RemoveAttr(n, attr);
  }

  void FloatAttrToInput(onnx::NodeProto* n, const std::string& attr, int slot, float fallback, bool always) {
    const auto* a = FindAttr(*n, attr);
    if (!a && !always) return;
    onnx::TensorProto t;
    t.set_name(FreshName(n->name() + "_" + attr));
    t.set_data_type(onnx::TensorProto::FLOAT);
    t.add_float_data(a ? a->f() : fallback);
    *graph_->add_initializer() = t;
    while (n->input_size() < slot) n->add_input("");
    n->add_input(t.name());
    RemoveAttr(n, attr);
  }

  std::string FreshName(const std::string& base) {
    std::string name = base;
    for (int k = 1; names_.count(name); ++k) name = base + "_" + std::to_string(k);
    names_.insert(name);
    return name;
  }

  // Opset 18 turned the `axes` attribute of the reductions other than ReduceSum into an input.
  void ConvertTo18(onnx::NodeProto* n) {
    static const std::set<std::string> kReductions = {"ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
                                                      "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};
    if (kReductions.count(n->op_type())) IntsAttrToInput(n, "axes", 1);
  }

  // Opset 20 renamed GridSample's modes (same sampling) and turned DFT's `axis` into an input
  // with another default; the other ops it touched only gained types or are new.
  void ConvertTo20(onnx::NodeProto* n) {
    if (n->op_type() == "GridSample") {
      for (auto& a : *n->mutable_attribute()) {
        if (a.name() != "mode") continue;
        if (a.s() == "bilinear") a.set_s("linear");
        if (a.s() == "bicubic") a.set_s("cubic");
      }
    } else if (n->op_type() == "DFT") {
      Refuse(*n, "changed its `axis` from an attribute to an input in opset 20 and is not converted by ptqkit");
    }
  }

  // Opset 21 changed GroupNormalization's scale and bias from one value per group to one per
  // channel; every other op it touched (Cast, Constant, Flatten, Pad, Reshape, Shape, Squeeze,
  // Transpose, ...) only gained the 4-bit types, and Q/DQ are refused before any upgrade.
  void ConvertTo21(onnx::NodeProto* n) {
    if (n->op_type() == "GroupNormalization") {
      Refuse(*n, "changed the shape of its scale and bias (per group -> per channel) in opset 21 and is not converted by ptqkit");
    }
  }

  void Convert(onnx::NodeProto* n) {
    if (from_ < 20 && to_ >= 20) ConvertTo20(n);
    if (from_ < 21 && to_ >= 21) ConvertTo21(n);
    if (from_ < 18 && to_ >= 18) ConvertTo18(n);
    if (from_ >= 13) return;
    const std::string& op = n->op_type();
    if (op == "Squeeze" || op == "Unsqueeze" || op == "ReduceSum") {
      IntsAttrToInput(n, "axes", 1);
    } else if (op == "Split") {
      IntsAttrToInput(n, "split", 1);
    } else if (op == "Softmax" || op == "LogSoftmax" || op == "Hardmax") {
      // Before 13 these flatten the input to 2-D at `axis` (default 1); from 13 they work on one
      // axis (default -1). The two agree only when `axis` is the last dimension.
      const auto* a = FindAttr(*n, "axis");
      const int64_t axis = a ? a->i() : 1;
      const auto rank = ranks_.find(n->input(0));
      const bool last = axis == -1 || (rank != ranks_.end() && rank->second > 0 && axis == rank->second - 1);
      if (!last) Refuse(*n, fmt::format("normalises over all dimensions from axis {}, which opset 13 cannot express without knowing the input rank", axis));
      RemoveAttr(n, "axis");
      auto* attr = n->add_attribute();
      attr->set_name("axis");
      attr->set_type(onnx::AttributeProto::INT);
      attr->set_i(-1);
    } else if (from_ < 11 && op == "Clip") {
      FloatAttrToInput(n, "min", 1, -3.402823466e38f, true);
      FloatAttrToInput(n, "max", 2, 3.402823466e38f, true);
    } else if (from_ < 11 && op == "Pad") {
      const auto* mode = FindAttr(*n, "mode");
      (void)mode;
      IntsAttrToInput(n, "pads", 1);
      FloatAttrToInput(n, "value", 2, 0.0f, false);
    } else if (from_ < 9 && op == "BatchNormalization") {
      const auto* spatial = FindAttr(*n, "spatial");
      if (spatial && spatial->i() != 1) Refuse(*n, "uses spatial=0");
      RemoveAttr(n, "spatial");
    } else if (op == "Upsample" || op == "Scan" || op == "Scatter" || (from_ < 10 && (op == "Slice" || op == "TopK")) ||
               (from_ < 11 && op == "Resize")) {
      Refuse(*n, "changed meaning before opset 13 and is not converted by ptqkit");
    }
  }

  onnx::GraphProto* graph_;
  int64_t from_;
  int64_t to_;
  std::set<std::string> names_;
  std::map<std::string, int> ranks_;
};

}  // namespace

int64_t UpgradeOpset(onnx::ModelProto* model, int64_t target) {
  const int64_t from = DefaultOpset(*model);
  if (from >= target) return from;
  Upgrader(model, from, target).Run();
  SetDefaultOpset(model, target);
  return from;
}

}  // namespace ptqkit::onnxio
