// The blocked-weight half of the Q/DQ writer (qdq_rewrite.cc), for the weight-only placement
// profile: one weight's quantized initializers in its row's block codec (blocked_weight_search.h for
// how each block is chosen, block_codec.h for the containers), its DequantizeLinear, and
// awq_lite's activation Muls. Internal to qdq_rewrite.cc, which owns the graph edit.
#pragma once

#include <onnx/onnx_pb.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "onnx/graph_editor.h"
#include "onnx/graph_index.h"
#include "quant/formats/formats.h"
#include "quant/formats/blocked_weight_search.h"
#include "quant/placement/placement.h"
#include "quant/rewrite/qdq_rewrite.h"

namespace ptqkit {

class BlockedWeightWriter {
 public:
  // REQUIRES: `format` has a block codec; the pointers outlive the writer.
  BlockedWeightWriter(onnx::GraphProto* graph, const GraphIndex* index, GraphEditor* editor, const QuantFormat& format,
                      const BlockedWeightOptions& options, RewriteStats* stats);

  // Writes the quantized copy of weight `q` (q.block_axis >= 0) and its DequantizeLinear, placed
  // at the front of the graph; returns the DequantizeLinear's output. Throws ptqkit::Error for a
  // weight the codec cannot take.
  std::string Add(const QuantizedTensor& q);
  // Frees the float values of initializer `name` when nothing but input 1 of `planned` nodes (now
  // being rewired to its DequantizeLinear) reads it: no other node, no subgraph, not a graph input
  // or output. The emptied initializer is removed when the writer drops unread weights.
  void ReleaseIfOnlyPlannedReads(const std::string& name, const std::set<int>& planned);
  // (node, its new input 0): awq_lite consumers now read Mul(activation, 1/s).
  const std::vector<std::pair<int, std::string>>& activation_rewires() const { return activation_rewires_; }

 private:
  // The search's options for a weight of `format` (float16 or not; `high`: --mixed_precision's INT8).
  BlockedWeightSearch SearchFor(const QuantFormat& format, bool half, bool high) const;
  // `target` quantized in `format`: from the cache when it holds it, else searched with `search`
  // (into *computed, or into the cache when there is one).
  const BlockedWeight& Quantized(const QuantizedTensor& target, const QuantFormat& format,
                                 const BlockedWeightSearch& search, bool high, BlockedWeight* computed);
  std::vector<std::string> CodedInputs(const QuantFormat& format, const std::string& name, int32_t float_type,
                                       const std::vector<int64_t>& shape, const BlockedWeight& q, int first,
                                       std::vector<std::pair<std::string, int64_t>>* attributes);
  void AddActivationScaling(const std::string& name, int32_t type, bool half, const BlockedWeight& q,
                            const QuantizedTensor& weight);
  std::string Fresh(const std::string& base) { return editor_->Fresh(base); }

  onnx::GraphProto* graph_;
  const GraphIndex* index_;
  GraphEditor* editor_;
  const QuantFormat& format_;
  const BlockedWeightOptions& options_;
  RewriteStats* stats_;
  std::vector<std::pair<int, std::string>> activation_rewires_;
  std::set<std::string> subgraph_reads_;  // names read inside subgraphs, once needed
};

}  // namespace ptqkit
