#include "quant/placement/selectors.h"

#include <fmt/format.h>

#include "base/log.h"
#include "base/pattern.h"
#include "ptqkit/error.h"

namespace ptqkit {

NodeSelector::NodeSelector(const GraphIndex& graph, const std::vector<std::string>& node_selectors,
                           const std::vector<std::string>& op_type_selectors, const std::string& node_option,
                           const std::string& op_type_option, std::set<std::string>* matched_out)
    : why_(static_cast<size_t>(graph.num_nodes())) {
  empty_ = node_selectors.empty() && op_type_selectors.empty();
  for (const auto& sel : node_selectors) {
    bool matched = false;
    const int exact = graph.FindNode(sel);
    if (exact >= 0) {
      selected_.insert(exact);
      why_[exact] = fmt::format("{} {}", node_option, sel);
      matched = true;
    } else {
      const Pattern re(sel, fmt::format("{} (not a node name either)", node_option));
      for (int i = 0; i < graph.num_nodes(); ++i) {
        const std::string& name = graph.node(i).name();
        if (re.MatchesFromStart(name)) {
          selected_.insert(i);
          if (why_[i].empty()) why_[i] = fmt::format("{} {}", node_option, sel);
          matched = true;
        }
      }
    }
    if (matched && matched_out) matched_out->insert(node_option + " " + sel);
    if (!matched && !matched_out) log::Warn("{} '{}' matches no node of the model", node_option, sel);
  }
  for (const auto& type : op_type_selectors) {
    bool matched = false;
    for (int i = 0; i < graph.num_nodes(); ++i) {
      if (graph.node(i).op_type() == type) {
        selected_.insert(i);
        if (why_[i].empty()) why_[i] = fmt::format("{} {}", op_type_option, type);
        matched = true;
      }
    }
    if (matched && matched_out) matched_out->insert(op_type_option + " " + type);
    if (!matched && !matched_out) log::Warn("{} '{}' matches no node of the model (no op of that type)", op_type_option, type);
  }
}

std::string NodeSelector::Why(int index) const { return why_[static_cast<size_t>(index)]; }

}  // namespace ptqkit
