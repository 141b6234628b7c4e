// NodeSelector: the --nodes_to_quantize / --nodes_to_exclude / --op_types_to_* matching rules.
//
// A node selector that is the exact name of a node selects that node only. Any other selector is
// a regular expression matched from the start of the node name (as in ModelOpt), except that an
// exact name never widens into a prefix: "/l/MatMul" does not also pick "/l/MatMul_1".
// Regular expressions are RE2's (base/pattern.h): linear time, whatever the name or pattern.
// Op-type selectors are exact op type names. Selectors that match nothing are reported with a
// warning naming them. Immutable after construction; thread-safe to read.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "onnx/graph_index.h"

namespace ptqkit {

class NodeSelector {
 public:
  // `option` is the CLI option name, used in messages. Throws ptqkit::Error for an invalid regex.
  // With `matched`, selectors that match are added to it as "<option> <selector>" and no warning
  // is given here (the caller matches one selector list against several graphs and warns once).
  NodeSelector(const GraphIndex& graph, const std::vector<std::string>& node_selectors,
               const std::vector<std::string>& op_type_selectors, const std::string& node_option,
               const std::string& op_type_option, std::set<std::string>* matched = nullptr);

  bool empty() const { return empty_; }
  // Whether node `index` is selected by a node selector or its op type by an op-type selector.
  bool Selects(int index) const { return selected_.count(index) > 0; }
  // The selector text that selected the node (for messages), or "".
  std::string Why(int index) const;

 private:
  bool empty_ = true;
  std::set<int> selected_;
  std::vector<std::string> why_;
};

}  // namespace ptqkit
