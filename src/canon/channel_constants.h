// The constants a fold reads and writes: a weight or bias found directly or through the Identity and
// Cast nodes some exporters (Paddle, TF) put between a Constant and its consumer, per-channel views
// of broadcastable constants, and new float/float16 initializers rounded once from double.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "onnx/graph_editor.h"
#include "onnx/graph_index.h"

namespace ptqkit::canon {

struct ConstantSource {
  const onnx::TensorProto* value = nullptr;
  int32_t type = 0;            // the element type its consumer sees (a Cast's `to`, else the constant's)
  std::vector<int> chain;      // the Identity/Cast nodes in between, consumer side first
  std::string root;            // name of the constant itself
};

// `tensor` as a constant no caller can override (not a graph input), or nullopt. Only FLOAT and
// FLOAT16 constants, seen as FLOAT or FLOAT16.
std::optional<ConstantSource> FindConstant(const GraphIndex& graph, const std::string& tensor);

// The per-channel values of a constant that broadcasts against an output of rank `rank` along
// `channel_axis` only (every other aligned dimension is 1): `channels` values (a single value is
// repeated). nullopt when it would broadcast along another axis or widen the output.
std::optional<std::vector<double>> ChannelValues(const onnx::TensorProto& constant, int rank, int channel_axis,
                                                 int64_t channels);

// A new initializer of `type` (FLOAT or FLOAT16) named after `base`, holding `values`; returns its name.
std::string AddValues(GraphEditor* editor, const std::string& base, int32_t type, const std::vector<int64_t>& dims,
                      const std::vector<double>& values);

// Removes nodes `dead` (indices into graph->node()).
void RemoveNodes(onnx::GraphProto* graph, const std::vector<int>& dead);

}  // namespace ptqkit::canon
