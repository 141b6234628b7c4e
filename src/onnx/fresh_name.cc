#include "onnx/fresh_name.h"

#include <fmt/format.h>

#include <set>

namespace ptqkit::onnxio {

std::string FreshTensorName(const onnx::GraphProto& graph, const std::string& base) {
  std::set<std::string> names;
  for (const auto& t : graph.initializer()) names.insert(t.name());
  for (const auto& v : graph.input()) names.insert(v.name());
  for (const auto& n : graph.node()) {
    for (const auto& o : n.output()) names.insert(o);
  }
  std::string name = base;
  for (int k = 1; names.count(name); ++k) name = fmt::format("{}_{}", base, k);
  return name;
}

}  // namespace ptqkit::onnxio
