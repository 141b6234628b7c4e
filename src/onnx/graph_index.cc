#include "onnx/graph_index.h"

#include <fmt/format.h>

#include <cstring>

#include "onnx/float16.h"
#include "onnx/op_traits.h"
#include "ptqkit/error.h"

namespace ptqkit {

GraphIndex::GraphIndex(const onnx::GraphProto& graph, const GraphIndex* outer) : graph_(&graph), outer_(outer) {
  for (const auto& t : graph.initializer()) constants_[t.name()] = &t;
  for (const auto& v : graph.input()) graph_inputs_.insert(v.name());
  for (const auto& v : graph.output()) graph_outputs_.insert(v.name());
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto& n = graph.node(i);
    if (!n.name().empty()) node_by_name_.emplace(n.name(), i);
    for (int j = 0; j < n.input_size(); ++j) {
      if (!n.input(j).empty()) consumers_[n.input(j)].push_back({i, j});
    }
    for (const auto& out : n.output()) {
      if (!out.empty()) producer_[out] = i;
    }
    if (HasRole(n, OpRole::kConstant) && n.output_size() == 1) {
      for (const auto& attr : n.attribute()) {
        if (attr.name() == "value" && attr.has_t()) constants_[n.output(0)] = &attr.t();
      }
    }
  }
}

int GraphIndex::Producer(const std::string& tensor) const {
  auto it = producer_.find(tensor);
  return it == producer_.end() ? -1 : it->second;
}

const std::vector<TensorUse>& GraphIndex::Consumers(const std::string& tensor) const {
  static const std::vector<TensorUse> kNone;
  auto it = consumers_.find(tensor);
  return it == consumers_.end() ? kNone : it->second;
}

const onnx::TensorProto* GraphIndex::Constant(const std::string& tensor) const {
  auto it = constants_.find(tensor);
  if (it != constants_.end()) return it->second;
  // Not defined here (a local node output or input would shadow the outer name): look outside.
  if (outer_ && !producer_.count(tensor) && !graph_inputs_.count(tensor)) return outer_->Constant(tensor);
  return nullptr;
}

int GraphIndex::FindNode(const std::string& name) const {
  auto it = node_by_name_.find(name);
  return it == node_by_name_.end() ? -1 : it->second;
}

std::vector<int64_t> TensorShape(const onnx::TensorProto& tensor) {
  return {tensor.dims().begin(), tensor.dims().end()};
}

int64_t ElementCount(const onnx::TensorProto& tensor) {
  int64_t n = 1;
  for (int64_t d : tensor.dims()) n *= d;
  return n;
}

std::vector<float> TensorToFloats(const onnx::TensorProto& t) {
  const int64_t count = ElementCount(t);
  std::vector<float> out(static_cast<size_t>(count));
  const auto bad_size = [&] {
    return Error(fmt::format("tensor '{}' holds fewer values than its shape needs", t.name()));
  };
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
      if (t.has_raw_data()) {
        if (t.raw_data().size() != out.size() * 4) throw bad_size();
        std::memcpy(out.data(), t.raw_data().data(), out.size() * 4);
      } else {
        if (t.float_data_size() != count) throw bad_size();
        std::copy(t.float_data().begin(), t.float_data().end(), out.begin());
      }
      return out;
    case onnx::TensorProto::FLOAT16:
      for (int64_t i = 0; i < count; ++i) {
        uint16_t bits;
        if (t.has_raw_data()) {
          if (t.raw_data().size() != out.size() * 2) throw bad_size();
          std::memcpy(&bits, t.raw_data().data() + 2 * i, 2);
        } else {
          if (t.int32_data_size() != count) throw bad_size();
          bits = static_cast<uint16_t>(t.int32_data(static_cast<int>(i)));
        }
        out[i] = HalfToFloat(bits);
      }
      return out;
    case onnx::TensorProto::DOUBLE:
      for (int64_t i = 0; i < count; ++i) {
        double v;
        if (t.has_raw_data()) {
          if (t.raw_data().size() != out.size() * 8) throw bad_size();
          std::memcpy(&v, t.raw_data().data() + 8 * i, 8);
        } else {
          if (t.double_data_size() != count) throw bad_size();
          v = t.double_data(static_cast<int>(i));
        }
        out[i] = static_cast<float>(v);
      }
      return out;
    default:
      throw Error(fmt::format("tensor '{}' has data type {}, expected a float type", t.name(), t.data_type()));
  }
}

int64_t IntAttribute(const onnx::NodeProto& node, const std::string& name, int64_t fallback) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name) return a.i();
  }
  return fallback;
}

float FloatAttribute(const onnx::NodeProto& node, const std::string& name, float fallback) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name) return a.f();
  }
  return fallback;
}

}  // namespace ptqkit
