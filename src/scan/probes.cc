#include "scan/probes.h"

#include <fmt/format.h>

#include <set>

#include "base/log.h"
#include "onnx/op_traits.h"
#include "ptqkit/error.h"
#include "scan/sensitivity_shard.h"

namespace ptqkit {
namespace {

std::vector<std::string> ScopeOpTypes(const GraphIndex& g, const std::vector<std::string>& scope) {
  std::set<std::string> present;
  for (int i = 0; i < g.num_nodes(); ++i) present.insert(g.node(i).op_type());
  std::vector<std::string> types;
  if (scope.empty()) {
    for (const auto& t : present)
      if (InDefaultSensitivityScope(t)) types.push_back(t);
    return types;
  }
  std::string absent;
  for (const auto& t : scope) {
    if (present.count(t)) types.push_back(t);
    else absent += (absent.empty() ? "'" : ", '") + t + "'";
  }
  if (absent.empty()) return types;
  std::string model_types;
  for (const auto& t : present) model_types += (model_types.empty() ? "" : ", ") + t;
  const std::string message = fmt::format("--op_types_scope {}: the model has no node of {} op type (its op types: {})",
                                          absent, types.size() + 1 < scope.size() ? "these" : "that", model_types);
  if (types.empty()) throw Error(message + "; nothing to score");
  log::Warn("{}", message);
  return types;
}

}  // namespace

const QuantFormat& TargetFormat(const SensitivityOptions& o) {
  return FindFormat(o.target_precision, "--target_precision", /*activations_only=*/true);
}

std::vector<Probe> MakeProbes(const GraphIndex& g, const SensitivityOptions& o) {
  const std::vector<std::string> types = ScopeOpTypes(g, o.op_types_scope);
  const QuantFormat& format = TargetFormat(o);
  std::vector<Probe> probes;
  if (o.granularity == "op_type") {
    for (const auto& t : types) {
      PlacementOptions p;
      p.format = &format;
      p.op_types_to_quantize = {t};
      probes.push_back({t, PlanPlacement(g, p), {}});
    }
  } else {
    const std::set<std::string> in_scope(types.begin(), types.end());
    for (int i = 0; i < g.num_nodes(); ++i) {
      if (!in_scope.count(g.node(i).op_type())) continue;
      PlacementOptions p;
      p.format = &format;
      p.nodes_to_quantize = {g.node(i).name()};  // an exact name selects that node only
      probes.push_back({g.node(i).name(), PlanPlacement(g, p), {}});
    }
  }
  return probes;
}

bool InDefaultSensitivityScope(const std::string& op) { return TraitsOf(op).Has(OpFlag::kSensitivityScope); }

std::vector<std::string> ScanCalibrationTensors(const onnx::ModelProto& model, const SensitivityOptions& o) {
  const GraphIndex index(model.graph());
  std::set<std::string> wanted;
  for (const auto& p : MakeProbes(index, o))
    for (const auto& t : p.plan.ActivationTensors()) wanted.insert(t);
  return {wanted.begin(), wanted.end()};
}

}  // namespace ptqkit
