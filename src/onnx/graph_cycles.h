// CheckAcyclic: an ONNX graph must be a DAG. ONNX Runtime says only "the graph is not acyclic";
// ptqkit names a node on the cycle and the tensor that closes it, so the user can find it.
// Pure function; thread-safe.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>

namespace ptqkit::onnxio {

// Throws ptqkit::Error naming `path`, a node on a cycle and the tensor it reads. Nodes are
// expected to be named (AssignNodeNames). Control-flow subgraphs are checked too.
void CheckAcyclic(const onnx::GraphProto& graph, const std::string& path);

}  // namespace ptqkit::onnxio
