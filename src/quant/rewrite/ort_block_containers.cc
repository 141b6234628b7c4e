#include "quant/rewrite/ort_block_containers.h"

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "onnx/graph_index.h"
#include "onnx/op_traits.h"
#include "quant/formats/block_codec.h"

namespace ptqkit {
namespace {

// `count` packed E2M1 codes (two a byte, element 0 in the low nibble) as FLOAT8E4M3FN bytes.
std::string E2M1AsFloat8(std::string_view packed, int64_t count) {
  std::string bytes(static_cast<size_t>(count), '\0');
  for (int64_t i = 0; i < count; ++i) {
    const auto byte = static_cast<uint8_t>(packed[static_cast<size_t>(i / 2)]);
    bytes[static_cast<size_t>(i)] =
        static_cast<char>(Float4E2M1ToFloat8E4M3FN(static_cast<uint8_t>(i % 2 ? byte >> 4 : byte & 0x0f)));
  }
  return bytes;
}

}  // namespace

bool HasStandardBlockContainers(const onnx::GraphProto& graph) {
  std::set<std::string> standard;
  for (const auto& t : graph.initializer()) {
    if (t.data_type() == onnx::TensorProto::FLOAT4E2M1 || t.data_type() == onnx::TensorProto::FLOAT8E8M0) {
      standard.insert(t.name());
    }
  }
  for (const auto& n : graph.node()) {
    if (!HasRole(n, OpRole::kDequantize)) continue;
    for (const auto& input : n.input()) {
      if (standard.count(input)) return true;
    }
  }
  return false;
}

void UseOrtCpuContainers(onnx::GraphProto* graph) {
  std::map<std::string, onnx::TensorProto*> initializers;
  for (auto& t : *graph->mutable_initializer()) initializers[t.name()] = &t;
  for (auto& n : *graph->mutable_node()) {
    if (!HasRole(n, OpRole::kDequantize) || n.input_size() < 2) continue;
    auto values = initializers.find(n.input(0));
    if (values != initializers.end() && values->second->data_type() == onnx::TensorProto::FLOAT4E2M1) {
      onnx::TensorProto* t = values->second;
      t->set_raw_data(E2M1AsFloat8(t->raw_data(), ElementCount(*t)));
      t->set_data_type(onnx::TensorProto::FLOAT8E4M3FN);
    }
    auto scales = initializers.find(n.input(1));
    if (scales == initializers.end() || scales->second->data_type() != onnx::TensorProto::FLOAT8E8M0) continue;
    int64_t float_type = onnx::TensorProto::FLOAT;
    for (int a = 0; a < n.attribute_size(); ++a) {
      if (n.attribute(a).name() != "output_dtype") continue;
      float_type = n.attribute(a).i();
      n.mutable_attribute()->DeleteSubrange(a, 1);
      break;
    }
    onnx::TensorProto* t = scales->second;
    std::vector<float> powers;
    for (char code : t->raw_data()) powers.push_back(std::ldexp(1.0f, static_cast<uint8_t>(code) - 127));
    t->set_raw_data(ScalesAsBytes(powers, float_type == onnx::TensorProto::FLOAT16));
    t->set_data_type(static_cast<int32_t>(float_type));
  }
}

}  // namespace ptqkit
