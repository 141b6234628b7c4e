#include <map>
#include <set>
#include <string>

#include "onnx/model_prep.h"

namespace ptqkit::onnxio {

void AssignNodeNames(onnx::GraphProto* graph) {
  std::set<std::string> taken;
  for (const auto& n : graph->node()) taken.insert(n.name());
  std::set<std::string> seen;
  std::map<std::string, int> next_index;  // per op type, so names do not shift when other ops change
  for (auto& n : *graph->mutable_node()) {
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

}  // namespace ptqkit::onnxio
