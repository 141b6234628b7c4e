#include <map>
#include <set>
#include <string>

#include "onnx/model_prep.h"
#include "onnx/subgraphs.h"

namespace ptqkit::onnxio {

void AssignNodeNames(onnx::GraphProto* graph) {
  // One namespace for the main graph and every control-flow subgraph: a selector or a score names
  // one node of the whole model. The main graph goes first, so its names do not depend on what
  // its subgraphs contain beyond the names they already use.
  const std::vector<GraphScope> scopes = AllGraphs(graph);
  std::set<std::string> taken;
  for (const auto& scope : scopes) {
    for (const auto& n : scope.graph->node()) taken.insert(n.name());
  }
  std::set<std::string> seen;
  std::map<std::string, int> next_index;  // per op type, so names do not shift when other ops change
  for (const auto& scope : scopes) {
    for (auto& n : *scope.graph->mutable_node()) {
      if (n.name().empty()) {
        std::string name;
        do {
          name = n.op_type() + "_" + std::to_string(next_index[n.op_type()]++);
        } while (taken.count(name));
        taken.insert(name);
        n.set_name(name);
      } else if (seen.count(n.name())) {
        std::string name;
        int k = 1;
        do {
          name = n.name() + "_dup" + std::to_string(k++);
        } while (taken.count(name));
        taken.insert(name);
        n.set_name(name);
      }
      seen.insert(n.name());
    }
  }
}

}  // namespace ptqkit::onnxio
