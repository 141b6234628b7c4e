#include "quant/weight_qdq_fold.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "onnx/subgraphs.h"
#include "quant/formats.h"

namespace ptqkit {
namespace {

struct GraphReads {
  std::map<std::string, int> by_nodes;  // main-graph node inputs, counted
  std::set<std::string> elsewhere;      // graph outputs and names read inside subgraphs
};

GraphReads CountReads(const onnx::GraphProto& g) {
  GraphReads reads;
  for (const auto& n : g.node()) {
    for (const auto& in : n.input()) ++reads.by_nodes[in];
    for (const auto& a : n.attribute()) {
      if (a.has_g()) onnxio::AddNodeReads(a.g(), &reads.elsewhere);
      for (const auto& sub : a.graphs()) onnxio::AddNodeReads(sub, &reads.elsewhere);
    }
  }
  for (const auto& o : g.output()) reads.elsewhere.insert(o.name());
  return reads;
}

// The axis attribute (default 1, as ONNX), or false when the node has any other attribute.
bool OnlyAxis(const onnx::NodeProto& n, int64_t* axis) {
  *axis = 1;
  for (const auto& a : n.attribute()) {
    if (a.name() != "axis") return false;
    *axis = a.i();
  }
  return true;
}

// The 8-bit format whose values have element type `type` (int8, fp8); nullptr for others.
const QuantFormat* ByteFormat(int32_t type) {
  for (const QuantFormat* f : AllFormats()) {
    if (f->values_per_byte == 1 && f->storage_type == type && f->fake_quantize) return f;
  }
  return nullptr;
}

class Folder {
 public:
  explicit Folder(onnx::GraphProto* g) : g_(g), reads_(CountReads(*g)) {
    for (auto& t : *g_->mutable_initializer()) inits_[t.name()] = &t;
    for (const auto& in : g_->input()) graph_inputs_.insert(in.name());
    for (int i = 0; i < g_->node_size(); ++i) {
      for (const auto& in : g_->node(i).input()) reader_[in] = i;  // used only where there is one reader
    }
  }

  int Run() {
    std::map<std::string, std::string> renamed;  // DQ output -> the folded weight
    std::set<int> removed;
    for (int i = 0; i < g_->node_size(); ++i) {
      const onnx::NodeProto& q = g_->node(i);
      if (q.op_type() != "QuantizeLinear" || !q.domain().empty() || q.input_size() != 3 || q.output_size() != 1) continue;
      const int dq_index = SoleReader(q.output(0));
      if (dq_index < 0) continue;
      const onnx::NodeProto& dq = g_->node(dq_index);
      if (!Foldable(q, dq)) continue;
      if (!Fold(q)) continue;
      renamed[dq.output(0)] = q.input(0);
      removed.insert(i);
      removed.insert(dq_index);
    }
    if (renamed.empty()) return 0;
    for (auto& n : *g_->mutable_node()) {
      for (auto& in : *n.mutable_input()) {
        auto it = renamed.find(in);
        if (it != renamed.end()) in = it->second;
      }
    }
    auto* nodes = g_->mutable_node();
    int index = 0;
    nodes->erase(std::remove_if(nodes->begin(), nodes->end(), [&](const onnx::NodeProto&) { return removed.count(index++) > 0; }),
                 nodes->end());
    return static_cast<int>(renamed.size());
  }

 private:
  // The index of the one DequantizeLinear that reads `tensor` and nothing else does; -1 otherwise.
  int SoleReader(const std::string& tensor) const {
    auto it = reads_.by_nodes.find(tensor);
    if (it == reads_.by_nodes.end() || it->second != 1 || reads_.elsewhere.count(tensor)) return -1;
    const int i = reader_.at(tensor);
    const onnx::NodeProto& n = g_->node(i);
    const bool is_dq = n.op_type() == "DequantizeLinear" && n.domain().empty() && n.input_size() == 3 &&
                       n.output_size() == 1 && n.input(0) == tensor;
    return is_dq ? i : -1;
  }

  const onnx::TensorProto* Init(const std::string& name) const {
    auto it = inits_.find(name);
    return it == inits_.end() || graph_inputs_.count(name) ? nullptr : it->second;
  }

  bool Foldable(const onnx::NodeProto& q, const onnx::NodeProto& dq) const {
    int64_t q_axis = 0, dq_axis = 0;
    if (!OnlyAxis(q, &q_axis) || !OnlyAxis(dq, &dq_axis) || q_axis != dq_axis) return false;
    if (q.input(1) != dq.input(1) || q.input(2) != dq.input(2)) return false;
    const std::string& weight = q.input(0);
    auto reads = reads_.by_nodes.find(weight);
    if (reads == reads_.by_nodes.end() || reads->second != 1 || reads_.elsewhere.count(weight)) return false;
    if (reads_.elsewhere.count(dq.output(0))) return false;  // a graph output keeps its name
    const onnx::TensorProto* w = Init(weight);
    const onnx::TensorProto* scale = Init(q.input(1));
    const onnx::TensorProto* zero = Init(q.input(2));
    if (!w || !scale || !zero) return false;
    if (w->data_type() != onnx::TensorProto::FLOAT || w->external_data_size() > 0) return false;
    if (!w->has_raw_data() && w->float_data_size() == 0) return false;
    if (scale->data_type() != onnx::TensorProto::FLOAT || !scale->has_raw_data() || scale->dims_size() > 1) return false;
    if (!zero->has_raw_data() || !ByteFormat(zero->data_type())) return false;
    const std::string& z = zero->raw_data();
    if (std::any_of(z.begin(), z.end(), [](char c) { return c != 0; })) return false;
    const size_t channels = scale->raw_data().size() / sizeof(float);
    if (z.size() != channels) return false;
    if (scale->dims_size() == 0) return channels == 1;
    const int64_t rank = w->dims_size();
    const int64_t axis = q_axis < 0 ? q_axis + rank : q_axis;
    return axis >= 0 && axis < rank && w->dims(static_cast<int>(axis)) == static_cast<int64_t>(channels);
  }

  // Overwrites the weight with DQ(Q(w)); false (nothing changed) when its size does not match its dims.
  bool Fold(const onnx::NodeProto& q) {
    onnx::TensorProto* w = inits_.at(q.input(0));
    const onnx::TensorProto* scale = Init(q.input(1));
    const QuantFormat& format = *ByteFormat(Init(q.input(2))->data_type());
    std::vector<float> scales(scale->raw_data().size() / sizeof(float));
    std::memcpy(scales.data(), scale->raw_data().data(), scales.size() * sizeof(float));
    int64_t count = 1, inner = 1;
    int64_t q_axis = 1;
    OnlyAxis(q, &q_axis);
    const int64_t rank = w->dims_size();
    const int64_t axis = q_axis < 0 ? q_axis + rank : q_axis;
    for (int d = 0; d < rank; ++d) {
      count *= w->dims(d);
      if (scales.size() > 1 && d > axis) inner *= w->dims(d);
    }
    const auto channels = static_cast<int64_t>(scales.size());
    if (!w->has_raw_data()) {  // float_data: a repeated float field, contiguous and aligned
      if (w->float_data_size() != count) return false;
      format.fake_quantize(w->mutable_float_data()->mutable_data(), count, scales.data(), channels, inner);
      return true;
    }
    std::string* raw = w->mutable_raw_data();
    if (raw->size() != static_cast<size_t>(count) * sizeof(float)) return false;
    if (reinterpret_cast<uintptr_t>(raw->data()) % alignof(float) == 0) {
      format.fake_quantize(reinterpret_cast<float*>(raw->data()), count, scales.data(), channels, inner);
      return true;
    }
    // A buffer not aligned for floats (never seen: protobuf's strings come from the heap) goes
    // through a copy of this one weight.
    std::vector<float> copy(static_cast<size_t>(count));
    std::memcpy(copy.data(), raw->data(), raw->size());
    format.fake_quantize(copy.data(), count, scales.data(), channels, inner);
    std::memcpy(raw->data(), copy.data(), raw->size());
    return true;
  }

  onnx::GraphProto* g_;
  GraphReads reads_;
  std::map<std::string, onnx::TensorProto*> inits_;
  std::set<std::string> graph_inputs_;
  std::map<std::string, int> reader_;  // tensor -> the last node reading it
};

}  // namespace

int FoldWeightQdq(onnx::ModelProto* model) { return Folder(model->mutable_graph()).Run(); }

}  // namespace ptqkit
