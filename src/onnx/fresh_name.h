// A tensor name no initializer, graph input or node output of `graph` uses yet: `base`, or
// `base_1`, `base_2`, ... (for initializers that rewrites add beside the user's).
#pragma once

#include <onnx/onnx_pb.h>

#include <string>

namespace ptqkit::onnxio {

std::string FreshTensorName(const onnx::GraphProto& graph, const std::string& base);

}  // namespace ptqkit::onnxio
