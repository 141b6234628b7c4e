#include "canon/channel_constants.h"

#include <algorithm>
#include <set>

#include "onnx/float16.h"

namespace ptqkit::canon {

std::optional<ConstantSource> FindConstant(const GraphIndex& graph, const std::string& tensor) {
  ConstantSource source;
  std::string t = tensor;
  int32_t seen_as = 0;
  for (int steps = 0; steps < 4; ++steps) {
    if (!WhyNotReplaceable(graph, t).empty()) return std::nullopt;
    if (const onnx::TensorProto* c = graph.Constant(t)) {
      if (c->data_type() != onnx::TensorProto::FLOAT && c->data_type() != onnx::TensorProto::FLOAT16) return std::nullopt;
      source.value = c;
      source.type = seen_as != 0 ? seen_as : c->data_type();
      source.root = t;
      return source;
    }
    const int p = graph.Producer(t);
    if (p < 0) return std::nullopt;
    const auto& n = graph.node(p);
    if (!n.domain().empty() || n.input_size() != 1 || n.output_size() != 1) return std::nullopt;
    if (n.op_type() == "Cast") {
      const int64_t to = IntAttribute(n, "to", 0);
      if (to != onnx::TensorProto::FLOAT && to != onnx::TensorProto::FLOAT16) return std::nullopt;
      if (seen_as == 0) seen_as = static_cast<int32_t>(to);  // the consumer sees the last Cast's type
    } else if (n.op_type() != "Identity") {
      return std::nullopt;
    }
    source.chain.push_back(p);
    t = n.input(0);
  }
  return std::nullopt;
}

std::optional<std::vector<double>> ChannelValues(const onnx::TensorProto& constant, int rank, int channel_axis,
                                                 int64_t channels) {
  const int q = constant.dims_size();
  if (q > rank) return std::nullopt;
  int64_t along_channel = 1;
  for (int k = 0; k < q; ++k) {
    const int axis = k + (rank - q);
    const int64_t d = constant.dims(k);
    if (axis == channel_axis) {
      if (d != 1 && d != channels) return std::nullopt;
      along_channel = d;
    } else if (d != 1) {
      return std::nullopt;
    }
  }
  const std::vector<float> v = TensorToFloats(constant);
  if (static_cast<int64_t>(v.size()) != along_channel) return std::nullopt;
  std::vector<double> out(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) out[c] = v[along_channel == 1 ? 0 : c];
  return out;
}

std::string AddValues(GraphEditor* editor, const std::string& base, int32_t type, const std::vector<int64_t>& dims,
                      const std::vector<double>& values) {
  const std::string name = editor->Fresh(base);
  std::string bytes;
  if (type == onnx::TensorProto::FLOAT16) {
    std::vector<uint16_t> bits(values.size());
    for (size_t i = 0; i < values.size(); ++i) bits[i] = FloatToHalf(static_cast<float>(values[i]));
    bytes.assign(reinterpret_cast<const char*>(bits.data()), bits.size() * sizeof(uint16_t));
  } else {
    std::vector<float> f(values.begin(), values.end());
    bytes.assign(reinterpret_cast<const char*>(f.data()), f.size() * sizeof(float));
  }
  editor->AddInitializer(name, type, dims, std::move(bytes));
  return name;
}

void RemoveNodes(onnx::GraphProto* graph, const std::vector<int>& dead) {
  const std::set<int> gone(dead.begin(), dead.end());
  google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
  for (int i = 0; i < graph->node_size(); ++i) {
    if (!gone.count(i)) kept.Add()->Swap(graph->mutable_node(i));
  }
  graph->mutable_node()->Swap(&kept);
}

}  // namespace ptqkit::canon
