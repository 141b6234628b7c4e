// The Q/DQ writer: turns a Placement plus scales into graph edits — a QuantizeLinear/DequantizeLinear
// pair per planned tensor (one pair shared by all its uses), consumers rewired to the DQ output.
// Every format and granularity goes through it: per tensor, per channel, and blocked.
//
// Activations: per-tensor scale amax/qmax (127 for INT8, 448 for FP8: quant/formats/formats.h), zero point 0
// (none at all for a format with zero_point_free: FP8).
// Weights: per-channel scales from the weight's own absmax; kept as FP32 initializer + Q -> DQ, or
// with dq_only stored quantized as an initializer + DQ (the FP32 copy is dropped when nothing else reads it).
// Blocked weights (the weight-only profile's, QuantizedTensor::block_axis >= 0): stored in the row's
// block codec with their blocks chosen by the weight-only search (blocked_weight_search.h) on
// options.blocked's Grams, as DequantizeLinear(values, scales[, zero points], axis, block_size) placed
// at the front of the graph (qdq_blocked_weight.h); awq_lite adds a Mul on each consumer's activation.
// Activations in dynamic blocks (QuantizedTensor::dynamic_blocks; nvfp4, mxfp8): the trt or ort
// form of dynamic_block_activation.h, before their first use; the trt form imports the "trt" domain.
// Bias inputs are never touched. New nodes are placed just before their first consumer, so the
// graph stays topologically sorted; new names never collide with existing ones.
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <set>
#include <string>

#include "quant/formats/formats.h"
#include "quant/formats/blocked_weight_search.h"
#include "quant/placement/placement.h"
#include "quant/placement/runtime_forms.h"

namespace ptqkit {

struct RewriteOptions {
  bool dq_only = false;
  // scale = amax / format->qmax (INT8: amax/127; FP8: amax/448, the whole E4M3FN grid, not
  // ModelOpt's amax*448/127^2), zero points of format->storage_type unless the format is
  // zero_point_free. REQUIRES: the model's opset is at least format->min_opset; a format with
  // activations (not placement.weight_only), or a weight-only one for a weight-only plan.
  const QuantFormat* format = &FindFormat("int8", "--quantize_mode");
  // Names new tensors must also avoid, when the graph rewritten is a part of a larger one (the
  // sensitivity scan rewrites a copy without most initializers).
  const std::set<std::string>* reserved_names = nullptr;
  // Weights use format->reduced_range_qmax when it is set: INT8 weights use 7 bits ([-63, 63],
  // scale = amax/63), as ONNX Runtime's own quantizer does
  // with reduce_range: its u8s8 kernels on x86 CPUs without VNNI sum pairs of u8*s8 products in
  // 16 bits, which saturates with full-range weights; it cannot with 7-bit ones.
  bool reduce_range = false;
  // Where the values of placeholder initializers (onnx/session_model.h WeightPlaceholder) are: a
  // candidate built only to be scored holds placeholders instead of the model's large weights, and
  // the rewrite (and bias correction) read each weight from here, one at a time.
  const std::map<std::string, const onnx::TensorProto*>* weight_source = nullptr;
  // Blocked weights: the search's options and Grams, --mixed_precision's INT8 weights.
  BlockedWeightOptions blocked;
  // The runtime's form (quant/placement/runtime_forms.h): with unsigned_activations, activations are stored
  // as UINT8 (zero point 0 and scale amax/255 for a QuantizedTensor::non_negative one, else zero
  // point 128 and scale amax/qmax); weights keep the format's storage.
  const RuntimeForm* runtime = &kTensorRtForm;
};

// The tensor whose values `t` holds: `t` itself, or the weight_source's tensor of that name when
// `t` is a placeholder. Throws ptqkit::Error when a placeholder has no source.
const onnx::TensorProto& WeightValues(const onnx::TensorProto& t, const RewriteOptions& options);

struct RewriteStats {
  int qdq_pairs = 0;        // Q/DQ (or DQ-only) pairs inserted
  int weight_tensors = 0;   // of which on weights
  // Blocked weights:
  int blocked_nodes = 0;       // MatMul/Gemm nodes now reading a blocked DequantizeLinear
  int64_t blocks = 0;          // scales written
  int64_t clipped_blocks = 0;  // blocks whose clipping ratio is < 1
  int scaled_weights = 0;      // awq_lite weights with alpha > 0 (their consumers read a Mul)
  int scale_muls = 0;          // Mul nodes inserted for them
  int high_weights = 0;        // weights stored in blocked.high_format (--mixed_precision)
  int dynamic_activations = 0;  // activations quantized in blocks scaled at run time (also in qdq_pairs)
  int dynamic_matmuls = 0;      // MatMuls whose input is quantized at run time (RuntimeForm::dynamic_matmuls)
  int int8_embeddings = 0;      // Gathers of embedding tables stored as INT8 rows (QuantizedTensor::embedding)
};

// REQUIRES: `plan` was made from a GraphIndex over model->graph() and the graph has not changed
// since; `activation_amax` has an entry for every activation tensor of the plan (after scale
// groups were merged); a plan with blocked weights is the weight-only profile's for options.format
// and the model's opset is at least format->min_opset (or its codec's ort_cpu_min_opset when
// UseOrtCpuContainers follows). Throws ptqkit::Error naming a tensor whose amax is missing.
RewriteStats InsertQdq(onnx::ModelProto* model, const Placement& plan,
                       const std::map<std::string, float>& activation_amax, const RewriteOptions& options);
// The same on a subgraph (If branch, Loop/Scan body): `plan` was made from a GraphIndex over
// `graph` whose outer index is `outer` (weights may be constants of the enclosing graphs; they are
// quantized into `graph`, the outer float copy is left to its other readers). New scales live in
// the subgraph; options.reserved_names should hold every name of the model.
RewriteStats InsertQdqInSubgraph(onnx::GraphProto* graph, const GraphIndex* outer, const Placement& plan,
                                 const std::map<std::string, float>& activation_amax, const RewriteOptions& options);

}  // namespace ptqkit
