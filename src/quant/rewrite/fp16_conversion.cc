#include "quant/rewrite/fp16_conversion.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <map>

#include "base/log.h"
#include "onnx/float16.h"
#include "onnx/graph_index.h"
#include "onnx/model_prep.h"
#include "onnx/onnx_library.h"
#include "onnx/op_traits.h"
#include "onnx/subgraphs.h"
#include "ptqkit/error.h"
#include "quant/rewrite/fp16_types.h"

namespace ptqkit {
namespace {

constexpr int32_t kFloat = onnx::TensorProto::FLOAT;
constexpr int32_t kFloat16 = onnx::TensorProto::FLOAT16;
constexpr int32_t kBfloat16 = onnx::TensorProto::BFLOAT16;
constexpr int32_t kAnyType = -1;  // an input that accepts every type (Cast, Shape, Size)

bool InDefaultDomain(const onnx::NodeProto& n) { return n.domain().empty() || n.domain() == "ai.onnx"; }

const onnx::AttributeProto* FindAttr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

bool HasSubgraph(const onnx::NodeProto& n) {
  for (const auto& a : n.attribute())
    if (a.has_g() || a.graphs_size() > 0) return true;
  return false;
}

std::string Suffix(int32_t type) {
  return type == kFloat16 ? "fp16" : type == kBfloat16 ? "bf16" : "fp32";
}

// ---- values ----------------------------------------------------------------------------------

uint16_t ToLowBits(float v, int32_t low) { return low == kFloat16 ? FloatToHalf(v) : FloatToBfloat16(v); }

// Exponent field of low-type bits: 0 is zero/subnormal, all ones is Inf/NaN.
uint32_t LowExponent(uint16_t bits, int32_t low) {
  return low == kFloat16 ? (bits >> 10) & 0x1fu : (bits >> 7) & 0xffu;
}
uint32_t LowExponentMax(int32_t low) { return low == kFloat16 ? 0x1fu : 0xffu; }
uint16_t LowMaxFinite(int32_t low) { return low == kFloat16 ? 0x7bff : 0x7f7f; }

// True when some value of a Q/DQ scale would not be a normal, finite number in the low type.
bool ScaleUnsafeInLowType(const std::vector<float>& scale, int32_t low) {
  for (float v : scale) {
    const uint32_t e = LowExponent(ToLowBits(v, low), low);
    if (e == 0 || e == LowExponentMax(low)) return true;
  }
  return false;
}

// Converts a FLOAT tensor to the low type in place (raw little-endian bits, as ONNX stores them);
// finite values beyond the low range become its largest finite value, with a warning.
void ConvertTensor(onnx::TensorProto* t, int32_t low, const std::string& what) {
  const std::vector<float> values = TensorToFloats(*t);
  std::vector<uint16_t> bits(values.size());
  size_t clamped = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    bits[i] = ToLowBits(values[i], low);
    if (std::isfinite(values[i]) && LowExponent(bits[i], low) == LowExponentMax(low)) {
      bits[i] = static_cast<uint16_t>(LowMaxFinite(low) | (std::signbit(values[i]) ? 0x8000 : 0));
      ++clamped;
    }
  }
  if (clamped > 0) {
    log::Warn("{}: {} value(s) beyond the {} range clamped to +-{}", what, clamped, Suffix(low),
              low == kFloat16 ? "65504" : "3.39e38");
  }
  t->clear_float_data();
  t->clear_double_data();
  t->set_data_type(low);
  t->set_raw_data(std::string(reinterpret_cast<const char*>(bits.data()), bits.size() * sizeof(uint16_t)));
}

// ---- the conversion --------------------------------------------------------------------------

class Converter {
 public:
  Converter(onnx::ModelProto* model, const LowPrecisionOptions& options)
      : model_(model),
        graph_(model->mutable_graph()),
        options_(options),
        low_(options.type),
        ops_(LowPrecisionOpTypes(options.type)),
        excluded_(options.op_types_to_exclude.begin(), options.op_types_to_exclude.end()) {}

  LowPrecisionStats Run() {
    names_ = onnxio::AllNames(*graph_);
    types_ = InferElemTypes(model_);
    for (const auto& n : graph_->node()) {
      for (const auto& a : n.attribute()) {
        // Outer-scope tensors a subgraph reads must keep their float32 type under their own name.
        if (a.has_g()) onnxio::AddNodeReads(a.g(), &subgraph_reads_);
        for (const auto& sg : a.graphs()) onnxio::AddNodeReads(sg, &subgraph_reads_);
      }
    }
    {
      const GraphIndex index(*graph_);
      ClassifyNodes(index);
      ChooseHomes(index);
    }
    before_.resize(static_cast<size_t>(graph_->node_size()) + 1);
    RenamePinned();
    RewriteNodes();
    ConvertConstants();
    Reassemble();
    UpdateDeclaredTypes();
    return stats_;
  }

 private:
  bool IsFloat(const std::string& t) const {
    auto it = types_.find(t);
    return !t.empty() && it != types_.end() && it->second == kFloat;
  }

  std::string Fresh(const std::string& base) {
    std::string name = base;
    for (int k = 1; names_.count(name); ++k) name = base + "_" + std::to_string(k);
    names_.insert(name);
    return name;
  }

  // A node runs in the low type when its op has a low-type definition, the user did not exclude
  // it, every tensor it touches has a known type, and its Q/DQ scale survives the conversion.
  void ClassifyNodes(const GraphIndex& index) {
    low_node_.assign(static_cast<size_t>(graph_->node_size()), false);
    std::set<std::string> warned;
    std::map<std::string, int> float32_op_types;
    for (int i = 0; i < graph_->node_size(); ++i) {
      const auto& n = graph_->node(i);
      bool low = InDefaultDomain(n) && ops_.count(n.op_type()) && !excluded_.count(n.op_type()) && !HasSubgraph(n);
      for (const auto& t : n.input()) low = low && (t.empty() || types_.count(t));
      for (const auto& t : n.output()) low = low && (t.empty() || types_.count(t));
      if (low && IsQdqOp(n) && n.input_size() > 1 &&
          IsFloat(n.input(1))) {
        const onnx::TensorProto* scale = index.Constant(n.input(1));
        if (scale && ScaleUnsafeInLowType(TensorToFloats(*scale), low_)) {
          low = false;
          if (warned.insert(n.input(1)).second) {
            log::Warn("scale '{}' has value(s) that are zero, subnormal or infinite in {}; the QuantizeLinear/"
                      "DequantizeLinear nodes reading it stay float32, with Casts",
                      n.input(1), Suffix(low_));
          }
        }
      }
      low_node_[i] = low;
      const bool touches_float = std::any_of(n.input().begin(), n.input().end(), [&](auto& t) { return IsFloat(t); }) ||
                                 std::any_of(n.output().begin(), n.output().end(), [&](auto& t) { return IsFloat(t); });
      if (!low && touches_float && !HasRole(n, OpRole::kConstant)) {
        stats_.float32_nodes.push_back(n.name());
        ++float32_op_types[n.op_type()];
      }
    }
    if (!float32_op_types.empty()) {
      std::string list;
      for (const auto& [op, count] : float32_op_types) list += fmt::format("{}{} x{}", list.empty() ? "" : ", ", op, count);
      log::Info("kept in float32 (with Casts): {}", list);
    }
  }

  // The type input `slot` of node `i` needs (kAnyType: whatever the tensor has).
  int32_t Want(int i, int slot) const {
    const auto& n = graph_->node(i);
    if (InDefaultDomain(n) && AnyTypeInput(n.op_type(), slot)) return kAnyType;
    if (!low_node_[i] || InputStaysFloat(n.op_type(), slot, low_)) return kFloat;
    return low_;
  }

  bool IsConstantNode(int i) const {
    if (i < 0) return false;
    const auto& n = graph_->node(i);
    return HasRole(n, OpRole::kConstant) && !FindAttr(n, "sparse_value") &&
           !excluded_.count("Constant");
  }

  // Decides the home type of each float32 tensor (the type its producer writes) and the pinned
  // type its own name must keep (graph outputs, tensors read by subgraphs).
  void ChooseHomes(const GraphIndex& index) {
    std::set<std::string> initializers, graph_inputs;
    for (const auto& t : graph_->initializer()) initializers.insert(t.name());
    for (const auto& v : graph_->input()) graph_inputs.insert(v.name());
    for (const auto& [t, type] : types_) {
      if (type != kFloat) continue;
      if (subgraph_reads_.count(t)) pin_[t] = kFloat;
      else if (index.IsGraphOutput(t)) pin_[t] = options_.direct_io_types ? low_ : kFloat;
      std::set<int32_t> wants;
      for (const auto& use : index.Consumers(t)) {
        const int32_t w = Want(use.node, use.input);
        if (w != kAnyType) wants.insert(w);
      }
      if (pin_.count(t)) wants.insert(pin_[t]);
      const bool only_low = wants.size() == 1 && *wants.begin() == low_;
      const int p = index.Producer(t);
      int32_t home = kFloat;
      if (graph_inputs.count(t)) {
        home = options_.direct_io_types && !subgraph_reads_.count(t) ? low_ : kFloat;
      } else if (initializers.count(t) || IsConstantNode(p)) {
        home = only_low ? low_ : kFloat;
      } else if (p >= 0 && low_node_[p]) {
        const auto& n = graph_->node(p);
        const int slot = static_cast<int>(std::find(n.output().begin(), n.output().end(), t) - n.output().begin());
        if (!OutputStaysFloat(n.op_type(), slot)) {
          // A Cast writes the low type only for readers that want it (its "to" is rewritten below).
          const bool cast = OutputTypeOf(n.op_type()) == OutputTypeSource::kToAttribute;
          home = cast ? (wants.count(low_) ? low_ : kFloat) : low_;
        }
      }
      home_[t] = home;
      versions_[t][home] = t;
    }
  }

  // A pinned tensor whose producer writes another type: the producer writes a new name and a Cast
  // recreates the original name in the pinned type, right after the producer.
  void RenamePinned() {
    const GraphIndex index(*graph_);
    for (const auto& [t, pin] : pin_) {
      const int32_t home = home_[t];
      if (pin == home) continue;
      bool is_input = false;
      for (const auto& v : graph_->input()) is_input = is_input || v.name() == t;
      if (is_input) continue;
      const std::string renamed = Fresh(t + "_" + Suffix(home));
      renamed_[t] = renamed;
      versions_[t] = {{home, renamed}, {pin, t}};
      const int p = index.Producer(t);
      AddCast(renamed, t, pin, p >= 0 ? p + 1 : 0);
    }
  }

  void AddCast(const std::string& from, const std::string& to, int32_t type, int before) {
    onnx::NodeProto c;
    c.set_op_type("Cast");
    c.set_name(Fresh(to + "_Cast"));
    c.add_input(from);
    c.add_output(to);
    auto* a = c.add_attribute();
    a->set_name("to");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(type);
    before_[static_cast<size_t>(before)].push_back(std::move(c));
    ++stats_.casts_inserted;
  }

  // The name under which `t` exists in `type`; made by a shared Cast placed before node `before`
  // (the first node that needs it) the first time it is asked for.
  std::string Version(const std::string& t, int32_t type, int before) {
    auto& v = versions_[t];
    if (type == kAnyType) return v.at(home_.at(t));
    auto it = v.find(type);
    if (it != v.end()) return it->second;
    const std::string out = Fresh(t + "_" + Suffix(type));
    AddCast(v.at(home_.at(t)), out, type, before);
    v[type] = out;
    return out;
  }

  void RewriteNodes() {
    for (int i = 0; i < graph_->node_size(); ++i) {
      auto* n = graph_->mutable_node(i);
      for (int k = 0; k < n->input_size(); ++k) {
        if (IsFloat(n->input(k))) n->set_input(k, Version(n->input(k), Want(i, k), i));
      }
      for (int j = 0; j < n->output_size(); ++j) {
        auto r = renamed_.find(n->output(j));
        if (r != renamed_.end()) n->set_output(j, r->second);
      }
      if (!low_node_[i]) continue;
      const OutputTypeSource source = OutputTypeOf(n->op_type());
      if (source == OutputTypeSource::kToAttribute && n->output_size() == 1 && home_.count(OriginalOutput(*n)) &&
          home_[OriginalOutput(*n)] == low_) {
        for (auto& a : *n->mutable_attribute())
          if (a.name() == "to") a.set_i(low_);
      }
      if (source == OutputTypeSource::kValueAttribute && home_.count(OriginalOutput(*n)) &&
          home_[OriginalOutput(*n)] == low_) {
        ConvertConstantOfShape(n);
      }
    }
  }

  std::string OriginalOutput(const onnx::NodeProto& n) const {
    for (const auto& [orig, now] : renamed_)
      if (now == n.output(0)) return orig;
    return n.output(0);
  }

  void ConvertConstantOfShape(onnx::NodeProto* n) {
    for (auto& a : *n->mutable_attribute()) {
      if (a.name() == "value") return ConvertTensor(a.mutable_t(), low_, fmt::format("node '{}'", n->name()));
    }
    // Absent value means float32 zero; say zero in the low type explicitly.
    auto* a = n->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    a->mutable_t()->set_data_type(low_);
    a->mutable_t()->add_dims(1);
    a->mutable_t()->set_raw_data(std::string(2, '\0'));
  }

  void ConvertConstants() {
    for (auto& t : *graph_->mutable_initializer()) {
      const std::string name = t.name();
      if (!IsFloat(name)) continue;
      if (home_[name] == low_) {
        ConvertTensor(&t, low_, fmt::format("initializer '{}'", name));
        ++stats_.converted_initializers;
      }
      auto r = renamed_.find(name);
      if (r != renamed_.end()) t.set_name(r->second);
    }
    for (int i = 0; i < graph_->node_size(); ++i) {
      if (!IsConstantNode(i)) continue;
      auto* n = graph_->mutable_node(i);
      const std::string& out = OriginalOutput(*n);
      if (!IsFloat(out) || home_[out] != low_) continue;
      for (auto& a : *n->mutable_attribute()) {
        if (a.name() == "value") {
          ConvertTensor(a.mutable_t(), low_, fmt::format("Constant '{}'", n->name()));
        } else if (a.name() == "value_float" || a.name() == "value_floats") {
          onnx::TensorProto t;
          t.set_data_type(kFloat);
          if (a.name() == "value_floats") {
            t.add_dims(a.floats_size());
            for (float f : a.floats()) t.add_float_data(f);
          } else {
            t.add_float_data(a.f());
          }
          ConvertTensor(&t, low_, fmt::format("Constant '{}'", n->name()));
          a.Clear();
          a.set_name("value");
          a.set_type(onnx::AttributeProto::TENSOR);
          *a.mutable_t() = std::move(t);
        }
      }
      ++stats_.converted_initializers;
    }
  }

  void Reassemble() {
    google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
    for (int i = 0; i <= graph_->node_size(); ++i) {
      for (auto& c : before_[static_cast<size_t>(i)]) *nodes.Add() = std::move(c);
      if (i < graph_->node_size()) *nodes.Add() = std::move(*graph_->mutable_node(i));
    }
    graph_->mutable_node()->Swap(&nodes);
  }

  // Declared types (inputs, outputs, value_info) follow the type each name now holds.
  void UpdateDeclaredTypes() {
    std::map<std::string, int32_t> now;
    for (const auto& [t, versions] : versions_)
      for (const auto& [type, name] : versions) now[name] = type;
    const auto update = [&](onnx::ValueInfoProto& v) {
      auto it = now.find(v.name());
      if (it != now.end() && v.type().has_tensor_type()) v.mutable_type()->mutable_tensor_type()->set_elem_type(it->second);
    };
    for (auto& v : *graph_->mutable_input()) update(v);
    for (auto& v : *graph_->mutable_output()) update(v);
    for (auto& v : *graph_->mutable_value_info()) update(v);
  }

  onnx::ModelProto* model_;
  onnx::GraphProto* graph_;
  LowPrecisionOptions options_;
  int32_t low_;
  const std::set<std::string>& ops_;
  std::set<std::string> excluded_;
  std::set<std::string> names_;
  std::set<std::string> subgraph_reads_;
  std::map<std::string, int32_t> types_;
  std::vector<bool> low_node_;
  std::map<std::string, int32_t> home_;                             // float32 tensor -> type its producer writes
  std::map<std::string, int32_t> pin_;                              // tensor -> type its own name must keep
  std::map<std::string, std::map<int32_t, std::string>> versions_;  // tensor -> type -> name holding it
  std::map<std::string, std::string> renamed_;                      // pinned tensor -> name its producer writes
  std::vector<std::vector<onnx::NodeProto>> before_;                // Casts to insert before node i
  LowPrecisionStats stats_;
};

}  // namespace

uint16_t FloatToBfloat16(float value) {
  const uint32_t f = std::bit_cast<uint32_t>(value);
  if ((f & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((f >> 16) | 0x40);  // quiet NaN
  const uint32_t rounding = 0x7fffu + ((f >> 16) & 1u);  // round half to even on the 16 dropped bits
  return static_cast<uint16_t>((f + rounding) >> 16);
}

float Bfloat16ToFloat(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

LowPrecisionStats ConvertToLowPrecision(onnx::ModelProto* model, const LowPrecisionOptions& options) {
  if (options.type != kFloat16 && options.type != kBfloat16) {
    throw Error(fmt::format("internal: low-precision type {} is neither FLOAT16 nor BFLOAT16", options.type));
  }
  // float16/bfloat16 scales of QuantizeLinear/DequantizeLinear exist from opset 19.
  if (onnxio::DefaultOpset(*model) < 19) onnxio::UpgradeOpset(model, 19);
  LowPrecisionStats stats = Converter(model, options).Run();
  log::Info("{}: {} initializer(s)/Constant(s) converted, {} Cast(s) inserted, {} node(s) kept in float32",
            Suffix(options.type), stats.converted_initializers, stats.casts_inserted, stats.float32_nodes.size());
  return stats;
}

}  // namespace ptqkit
