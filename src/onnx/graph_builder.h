// GraphBuilder: a few lines to build small ONNX models in C++ tests (and examples) without
// spelling out protobuf. Weights are filled deterministically from their name, so tests do not
// depend on a random generator. Not meant for production graph edits.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ptqkit {

class GraphBuilder {
 public:
  // A float graph input; negative dims are dynamic ("N").
  GraphBuilder& Input(const std::string& name, const std::vector<int64_t>& dims,
                      int32_t elem_type = onnx::TensorProto::FLOAT);
  GraphBuilder& Output(const std::string& name, int32_t elem_type = onnx::TensorProto::FLOAT);
  // A float initializer with values in [-scale, scale], deterministic per name.
  GraphBuilder& Weight(const std::string& name, const std::vector<int64_t>& dims, float scale = 0.1f);
  // A float weight produced by a Constant node instead of an initializer.
  GraphBuilder& ConstantWeight(const std::string& name, const std::vector<int64_t>& dims, float scale = 0.1f);
  GraphBuilder& Int64Initializer(const std::string& name, const std::vector<int64_t>& values);
  // Adds a node named `name` (or "<op>_<n>" when empty) with integer(s) attributes.
  GraphBuilder& Node(const std::string& op, const std::vector<std::string>& inputs,
                     const std::vector<std::string>& outputs, const std::string& name = "",
                     const std::map<std::string, std::vector<int64_t>>& int_attrs = {},
                     const std::map<std::string, float>& float_attrs = {});

  onnx::ModelProto Build(int64_t opset = 17) const;

 private:
  onnx::GraphProto graph_;
  int counter_ = 0;
};

}  // namespace ptqkit
