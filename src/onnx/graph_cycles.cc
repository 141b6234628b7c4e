#include "onnx/graph_cycles.h"

#include <fmt/format.h>

#include <unordered_map>
#include <vector>

#include "ptqkit/error.h"

namespace ptqkit::onnxio {

void CheckAcyclic(const onnx::GraphProto& graph, const std::string& path) {
  const int n = graph.node_size();
  std::unordered_map<std::string, int> producer;
  for (int i = 0; i < n; ++i) {
    for (const auto& out : graph.node(i).output()) {
      if (!out.empty()) producer.emplace(out, i);
    }
  }
  // Kahn's algorithm, iteratively (no recursion: graphs can have millions of nodes).
  std::vector<std::vector<int>> readers(static_cast<size_t>(n));
  std::vector<int> pending(static_cast<size_t>(n), 0);
  for (int i = 0; i < n; ++i) {
    for (const auto& in : graph.node(i).input()) {
      const auto it = producer.find(in);
      if (it == producer.end()) continue;
      readers[static_cast<size_t>(it->second)].push_back(i);
      ++pending[static_cast<size_t>(i)];
    }
  }
  std::vector<int> ready;
  for (int i = 0; i < n; ++i) {
    if (pending[static_cast<size_t>(i)] == 0) ready.push_back(i);
  }
  int done = 0;
  while (!ready.empty()) {
    const int i = ready.back();
    ready.pop_back();
    ++done;
    for (int r : readers[static_cast<size_t>(i)]) {
      if (--pending[static_cast<size_t>(r)] == 0) ready.push_back(r);
    }
  }
  if (done < n) {
    // Walk back from an unfinished node along unfinished producers until a node repeats: that
    // node is on a cycle (the unfinished nodes all lie on or behind one).
    int node = 0;
    while (pending[static_cast<size_t>(node)] == 0) ++node;
    std::vector<bool> seen(static_cast<size_t>(n), false);
    std::string via;
    while (!seen[static_cast<size_t>(node)]) {
      seen[static_cast<size_t>(node)] = true;
      for (const auto& in : graph.node(node).input()) {
        const auto it = producer.find(in);
        if (it != producer.end() && pending[static_cast<size_t>(it->second)] > 0) {
          node = it->second;
          via = in;
          break;
        }
      }
    }
    const auto& culprit = graph.node(node);
    throw Error(fmt::format("model '{}' has a cycle: node '{}' ({}) depends on its own output (through tensor "
                            "'{}'); an ONNX graph must be acyclic",
                            path, culprit.name(), culprit.op_type(), via));
  }
  for (const auto& node : graph.node()) {
    for (const auto& attr : node.attribute()) {
      if (attr.has_g()) CheckAcyclic(attr.g(), path);
      for (const auto& g : attr.graphs()) CheckAcyclic(g, path);
    }
  }
}

}  // namespace ptqkit::onnxio
