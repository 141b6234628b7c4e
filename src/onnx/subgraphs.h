// Subgraphs: the graphs nested in control-flow nodes (If branches, Loop and Scan bodies, at any
// depth). Real exports put whole networks there (a voice-activity detector keeps its network in
// the branches of an If on the sample rate), so every stage that looks for nodes to quantize walks
// all of them, not only the main graph.
//
//  - AllGraphs lists the main graph and every subgraph, parents before their children.
//  - ExposeToMainGraph makes tensors computed inside subgraphs observable from outside: ONNX
//    Runtime can only return main-graph outputs, so each tensor is threaded out through its
//    enclosing control-flow nodes as an extra output (an If's other branch yields an empty tensor;
//    a Loop or Scan returns the values of every iteration stacked).
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace ptqkit::onnxio {

struct GraphScope {
  onnx::GraphProto* graph = nullptr;
  int parent = -1;           // index of the enclosing scope in AllGraphs' result; -1 for the main graph
  int owner_node = -1;       // index of the control-flow node in the parent graph
  std::string attribute;     // "then_branch", "else_branch", "body"
  std::string path;          // readable: "If_0/then_branch/Loop_3/body"
};

// The main graph first, then every subgraph depth-first, each after its parent.
std::vector<GraphScope> AllGraphs(onnx::GraphProto* main);

// Whether any node of `main` (at any depth) has a graph attribute.
bool HasSubgraphs(const onnx::GraphProto& main);

// Adds every tensor name a node of `graph` reads, at any depth (a subgraph reads the enclosing
// graphs' tensors by name).
void AddNodeReads(const onnx::GraphProto& graph, std::set<std::string>* reads);

// Every name used in the model: tensors, nodes, initializers, inputs and outputs of all graphs.
std::set<std::string> AllNames(const onnx::GraphProto& main);

// Element type of every tensor whose type `main` (or a subgraph) declares: inputs, outputs,
// value_info (run shape inference first to have them all).
std::map<std::string, int32_t> DeclaredElemTypes(const onnx::GraphProto& main);

// For each of `tensors` that is defined inside a subgraph (a node output there, or an input of a
// Loop/Scan body), edits `model` so that its values come out as a main-graph output, and returns
// tensor -> name of that output. Tensors of the main graph are not in the map (they can be
// requested directly). `elem_types` gives the element type of a tensor where known (default FLOAT).
// Tensors named but not found anywhere are ignored.
std::map<std::string, std::string> ExposeToMainGraph(onnx::ModelProto* model, const std::vector<std::string>& tensors,
                                                     const std::map<std::string, int32_t>& elem_types);

}  // namespace ptqkit::onnxio
