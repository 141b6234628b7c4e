#include <fmt/format.h>

#include <map>
#include <memory>
#include <set>

#include "cli/commands.h"
#include "onnx/model_io.h"
#include "onnx/model_prep.h"
#include "runtime/model_inputs.h"

namespace ptqkit::cli {
namespace {

std::string DescribeValue(const onnx::ValueInfoProto& v) {
  const auto& tt = v.type().tensor_type();
  std::string dims;
  for (const auto& d : tt.shape().dim()) {
    if (!dims.empty()) dims += "x";
    dims += d.has_dim_value() ? std::to_string(d.dim_value()) : (d.dim_param().empty() ? "?" : d.dim_param());
  }
  return fmt::format("{} {} [{}]", v.name(), DataTypeName(static_cast<DataType>(tt.elem_type())), dims);
}

int Inspect(const std::string& path) {
  onnx::ModelProto model = onnxio::LoadModel(path);
  onnxio::AssignNodeNames(model.mutable_graph());  // the names ptqkit will use for selectors
  const auto& g = model.graph();
  fmt::print("model: {}\n", path);
  fmt::print("ir_version: {}  producer: {} {}\n", model.ir_version(), model.producer_name(), model.producer_version());
  fmt::print("opsets:");
  for (const auto& op : model.opset_import()) fmt::print(" {}={}", op.domain().empty() ? "ai.onnx" : op.domain(), op.version());
  fmt::print("\ninputs:\n");
  std::set<std::string> inits;
  for (const auto& t : g.initializer()) inits.insert(t.name());
  for (const auto& v : g.input()) {
    if (!inits.count(v.name())) fmt::print("  {}\n", DescribeValue(v));
  }
  fmt::print("outputs:\n");
  for (const auto& v : g.output()) fmt::print("  {}\n", DescribeValue(v));
  std::map<std::string, int> counts;
  for (const auto& n : g.node()) ++counts[(n.domain().empty() ? "" : n.domain() + ".") + n.op_type()];
  fmt::print("op types ({} nodes, {} initializers):\n", g.node_size(), g.initializer_size());
  for (const auto& [op, n] : counts) fmt::print("  {:<24} {}\n", op, n);
  fmt::print("nodes:\n");
  for (const auto& n : g.node()) fmt::print("  {:<24} {}\n", n.op_type(), n.name());
  return 0;
}

}  // namespace

Command RegisterInspect(CLI::App& app) {
  auto* cmd = app.add_subcommand("inspect", "Print a model's inputs, outputs, opsets, op types and node names");
  auto path = std::make_shared<std::string>();
  cmd->add_option("onnx_path", *path, "ONNX model")->required();
  return [path]() { return Inspect(*path); };
}

}  // namespace ptqkit::cli
