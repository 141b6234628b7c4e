// Model preparation done right after loading, before anything looks at node names or ops:
//  - AssignNodeNames gives every unnamed node a unique, stable name ("<OpType>_<n>", n counted
//    per op type in graph order), and renames later duplicates ("<name>_dup<k>"), so that every
//    node can be addressed by --nodes_to_exclude and in sensitivity scores.
//  - CheckModel refuses what ptqkit does not handle: IR < 3, no default-domain opset, opset newer
//    than 21, a model that already contains QuantizeLinear/DequantizeLinear.
// (Opset upgrades are the ONNX library's version converter: onnx/onnx_library.h.)
// All functions edit the model in place and throw ptqkit::Error.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>

namespace ptqkit::onnxio {

// Version of the default ("" / "ai.onnx") domain, or 0 when the model does not import it.
int64_t DefaultOpset(const onnx::ModelProto& model);
void SetDefaultOpset(onnx::ModelProto* model, int64_t version);

void AssignNodeNames(onnx::GraphProto* graph);
void CheckModel(const onnx::ModelProto& model, const std::string& path);

}  // namespace ptqkit::onnxio
