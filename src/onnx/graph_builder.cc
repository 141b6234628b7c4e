#include "onnx/graph_builder.h"

#include <cmath>
#include <functional>
#include <set>

namespace ptqkit {
namespace {

void SetType(onnx::ValueInfoProto* v, int32_t elem_type, const std::vector<int64_t>* dims) {
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem_type);
  if (!dims) return;
  auto* shape = tt->mutable_shape();
  for (auto d : *dims) {
    auto* dim = shape->add_dim();
    if (d >= 0) dim->set_dim_value(d);
    else dim->set_dim_param("N");
  }
}

onnx::TensorProto MakeWeight(const std::string& name, const std::vector<int64_t>& dims, float scale) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  int64_t count = 1;
  for (auto d : dims) {
    t.add_dims(d);
    count *= d;
  }
  // A cheap deterministic sequence seeded by the name: sin of a hashed index spreads values evenly.
  const uint64_t seed = std::hash<std::string>{}(name) % 1000;
  for (int64_t i = 0; i < count; ++i) t.add_float_data(scale * std::sin(0.7f * static_cast<float>(i) + static_cast<float>(seed)));
  return t;
}

}  // namespace

GraphBuilder& GraphBuilder::Input(const std::string& name, const std::vector<int64_t>& dims, int32_t elem_type) {
  auto* v = graph_.add_input();
  v->set_name(name);
  SetType(v, elem_type, &dims);
  return *this;
}

GraphBuilder& GraphBuilder::Output(const std::string& name, int32_t elem_type) {
  auto* v = graph_.add_output();
  v->set_name(name);
  SetType(v, elem_type, nullptr);
  return *this;
}

GraphBuilder& GraphBuilder::Weight(const std::string& name, const std::vector<int64_t>& dims, float scale) {
  *graph_.add_initializer() = MakeWeight(name, dims, scale);
  return *this;
}

GraphBuilder& GraphBuilder::ConstantWeight(const std::string& name, const std::vector<int64_t>& dims, float scale) {
  auto* n = graph_.add_node();
  n->set_op_type("Constant");
  n->set_name(name + "_Constant");
  n->add_output(name);
  auto* a = n->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  *a->mutable_t() = MakeWeight(name, dims, scale);
  return *this;
}

GraphBuilder& GraphBuilder::Int64Initializer(const std::string& name, const std::vector<int64_t>& values) {
  auto* t = graph_.add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(static_cast<int64_t>(values.size()));
  for (auto v : values) t->add_int64_data(v);
  return *this;
}

GraphBuilder& GraphBuilder::Node(const std::string& op, const std::vector<std::string>& inputs,
                                 const std::vector<std::string>& outputs, const std::string& name,
                                 const std::map<std::string, std::vector<int64_t>>& int_attrs,
                                 const std::map<std::string, float>& float_attrs) {
  auto* n = graph_.add_node();
  n->set_op_type(op);
  n->set_name(name.empty() ? op + "_" + std::to_string(counter_++) : name);
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  for (const auto& [key, values] : int_attrs) {
    auto* a = n->add_attribute();
    a->set_name(key);
    // Attributes that ONNX defines as lists stay lists even with one value.
    static const std::set<std::string> kLists = {"kernel_shape", "pads", "strides", "dilations", "perm", "axes"};
    if (values.size() == 1 && !kLists.count(key)) {
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(values[0]);
    } else {
      a->set_type(onnx::AttributeProto::INTS);
      for (auto v : values) a->add_ints(v);
    }
  }
  for (const auto& [key, value] : float_attrs) {
    auto* a = n->add_attribute();
    a->set_name(key);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(value);
  }
  return *this;
}

onnx::ModelProto GraphBuilder::Build(int64_t opset) const {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("ptqkit-test");
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  *m.mutable_graph() = graph_;
  m.mutable_graph()->set_name("test");
  return m;
}

}  // namespace ptqkit
