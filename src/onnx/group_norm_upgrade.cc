#include "onnx/group_norm_upgrade.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "onnx/fresh_name.h"
#include "onnx/graph_index.h"
#include "onnx/onnx_library.h"
#include "onnx/subgraphs.h"
#include "ptqkit/error.h"

namespace ptqkit::onnxio {
namespace {

// Dim 1 (channels) of `tensor` from shape inference, or -1.
int64_t Channels(const onnx::ModelProto& inferred, const std::string& tensor) {
  const auto& g = inferred.graph();
  for (const auto* values : {&g.value_info(), &g.input()}) {
    for (const auto& v : *values) {
      if (v.name() != tensor || !v.type().tensor_type().has_shape()) continue;
      const auto& shape = v.type().tensor_type().shape();
      if (shape.dim_size() >= 2 && shape.dim(1).has_dim_value()) return shape.dim(1).dim_value();
    }
  }
  return -1;
}

// The element bytes of a float/float16/bfloat16 initializer, or "" when it has none we can copy.
std::string ElementBytes(const onnx::TensorProto& t, size_t* element_size) {
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
      *element_size = 4;
      if (t.has_raw_data()) return t.raw_data();
      return std::string(reinterpret_cast<const char*>(t.float_data().data()), t.float_data_size() * sizeof(float));
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16:
      *element_size = 2;
      if (t.has_raw_data()) return t.raw_data();
      {
        std::string bytes;
        for (int32_t bits : t.int32_data()) {
          const uint16_t h = static_cast<uint16_t>(bits);
          bytes.append(reinterpret_cast<const char*>(&h), sizeof(h));
        }
        return bytes;
      }
    default:
      return "";
  }
}

bool IsGroupNormalization(const onnx::NodeProto& n) {
  return n.op_type() == "GroupNormalization" && (n.domain().empty() || n.domain() == "ai.onnx");
}

}  // namespace

bool HasGroupNormalization(const onnx::GraphProto& graph) {
  return std::any_of(graph.node().begin(), graph.node().end(), IsGroupNormalization);
}

void WidenGroupNormalizationParameters(onnx::ModelProto* model) {
  if (!HasGroupNormalization(model->graph())) return;
  const onnx::ModelProto inferred = InferShapes(model);
  std::map<std::string, const onnx::TensorProto*> inits;
  for (const auto& t : model->graph().initializer()) inits[t.name()] = &t;
  std::set<std::string> replaced;
  auto* nodes = model->mutable_graph()->mutable_node();
  for (auto& n : *nodes) {
    if (!IsGroupNormalization(n)) continue;
    const int64_t groups = IntAttribute(n, "num_groups", 0);
    const int64_t channels = n.input_size() == 3 ? Channels(inferred, n.input(0)) : -1;
    if (groups <= 0 || channels <= 0 || channels % groups != 0) {
      throw Error(fmt::format("cannot raise GroupNormalization '{}' to opset 21 (its scale and bias become per "
                              "channel there): the channel count of its input '{}' is not known (num_groups {})",
                              n.name(), n.input_size() > 0 ? n.input(0) : "", groups),
                  Error::Kind::kUnsupported);
    }
    for (int i = 1; i <= 2; ++i) {
      auto it = inits.find(n.input(i));
      size_t element_size = 0;
      const std::string bytes = it == inits.end() ? "" : ElementBytes(*it->second, &element_size);
      if (bytes.empty() || bytes.size() % element_size != 0) {
        throw Error(fmt::format("cannot raise GroupNormalization '{}' to opset 21 (its scale and bias become per "
                                "channel there): its {} '{}' is not a float initializer",
                                n.name(), i == 1 ? "scale" : "bias", n.input(i)),
                    Error::Kind::kUnsupported);
      }
      const int64_t count = static_cast<int64_t>(bytes.size() / element_size);
      if (count == channels) continue;  // already per channel
      if (count != groups) {
        throw Error(fmt::format("GroupNormalization '{}': its {} has {} values, neither num_groups ({}) nor the "
                                "input's {} channels",
                                n.name(), i == 1 ? "scale" : "bias", count, groups, channels));
      }
      onnx::TensorProto wide;
      wide.set_name(FreshTensorName(model->graph(), n.input(i) + "_per_channel"));
      wide.set_data_type(it->second->data_type());
      wide.add_dims(channels);
      std::string raw;
      const int64_t per_group = channels / groups;
      for (int64_t c = 0; c < channels; ++c) {
        raw.append(bytes, static_cast<size_t>(c / per_group) * element_size, element_size);
      }
      wide.set_raw_data(raw);
      replaced.insert(n.input(i));
      n.set_input(i, wide.name());
      // Added now, so the next fresh name sees it (initializer pointers stay valid: repeated messages).
      *model->mutable_graph()->add_initializer() = std::move(wide);
    }
  }
  // The per-group originals go unless something else still reads them.
  std::set<std::string> reads;
  AddNodeReads(model->graph(), &reads);
  for (const auto& o : model->graph().output()) reads.insert(o.name());
  auto* all = model->mutable_graph()->mutable_initializer();
  const auto unread = [&](const onnx::TensorProto& t) { return replaced.count(t.name()) && !reads.count(t.name()); };
  all->erase(std::remove_if(all->begin(), all->end(), unread), all->end());
}

}  // namespace ptqkit::onnxio
