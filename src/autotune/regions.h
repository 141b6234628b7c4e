// Regions of a graph for the autotune search, and their grouping by structure.
//
// A region is a core quantizable node (Conv, ConvTranspose, Gemm, MatMul) with its elementwise
// tail — the chain of single-consumer epilogue ops after it (BatchNormalization, activations, a
// residual Add, pooling) — or a quantized node that no core node's tail claims (a lone pooling,
// Add, Resize, ...). Only quantized nodes matter to the search: a region's schemes decide which of
// them keep their Q/DQ inputs.
//
// Regions whose nodes have the same op types, attributes and weight / activation shapes get the
// same signature; one group per signature shares one decision, so a network's repeated blocks are
// timed once, not once per copy. Pure functions of the model; thread-compatible.
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <string>
#include <vector>

namespace ptqkit::autotune {

// What a region keeps quantized: everything the rules chose, the core node only (its tail's
// quantized nodes in float), or nothing.
enum class Scheme { kQuantize, kCoreOnly, kFloat };
std::string SchemeName(Scheme scheme);         // quantize | core_only | float
Scheme ParseScheme(const std::string& name);  // throws ptqkit::Error for another name

struct Region {
  std::string core;                          // the core node ("" for a lone quantized node)
  std::vector<std::string> quantized_nodes;  // core first, then the quantized tail nodes
  std::vector<std::string> tail_nodes;       // every tail node (quantized or not), for the signature
  std::string signature;
  double cost = 0.0;  // estimated multiply-accumulates (elementwise ops: output elements), or measured ms
};

struct RegionGroup {
  std::string signature;
  std::vector<Region> regions;
  double cost = 0.0;             // sum over regions
  std::vector<Scheme> schemes;   // kQuantize, kFloat, then kCoreOnly where it differs from both
};

// The regions covering `quantized_nodes` (names, as ModelPlacement::QuantizedNodes() lists them).
// `model` should carry inferred value_info (onnxio::InferShapes) for activation shapes and costs;
// without it costs fall back to weight sizes. Nodes not in the main graph (control-flow bodies)
// become lone regions of cost 0.
std::vector<Region> BuildRegions(const onnx::ModelProto& model, const std::vector<std::string>& quantized_nodes);

// Replaces each region's estimated cost by the measured time (ms) of its nodes — the core and its
// tail, or the lone node — from `node_ms` (node_profile.h). Returns false and changes nothing when
// the times miss more than a tenth of the cores and lone nodes (a profile that does not name them;
// tail nodes may be missing, fused into their core).
bool UseMeasuredCosts(const std::map<std::string, double>& node_ms, std::vector<Region>* regions);

// Groups by signature, most costly group first (ties: by signature, so the order is deterministic).
std::vector<RegionGroup> GroupRegions(const std::vector<Region>& regions);

// The nodes a group's scheme keeps in float (quantized by the rules but not by the scheme).
std::vector<std::string> NodesInFloat(const RegionGroup& group, Scheme scheme);

}  // namespace ptqkit::autotune
