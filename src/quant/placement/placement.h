// Placement: which tensors get a Q/DQ pair, decided from the graph alone (before calibration).
//
// The default rules follow TensorRT's explicit-quantization guidance as ModelOpt applies it
// (DESIGN.md "Placement"): quantize the activation and weight inputs of Conv, ConvTranspose,
// Gemm and MatMul, never outputs; leave Conv epilogues, GELU/LayerNorm chains and the attention
// core in float; quantize a residual Add's skip input, pooling next to quantized ops, Resize and
// LayerNormalization fed by a Conv; share one Q/DQ per tensor; give Concat inputs one scale.
// User selectors come on top, in the precedence order DESIGN.md fixes.
//
// A weight-only format's profile (PlacementProfile::weight_only: int4, nvfp4, mxfp8) plans
// differently: every MatMul/Gemm whose weight (input B) is a replaceable float constant of rank
// >= 2 gets that weight quantized in blocks along its K axis (QuantizedTensor::block_axis), after
// the user's selectors; activations are never planned, and the other MatMul/Gemm nodes are listed
// in float_reasons. One entry per (weight, K axis), in order of weight name; with
// quantize_activations, then one per activation read as input A (QuantizedTensor::dynamic_blocks),
// in order of name.
//
// PlanPlacement is a pure function of the graph and the options; the result refers to nodes by
// index into the graph the GraphIndex was built on.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "onnx/graph_index.h"
#include "quant/formats/formats.h"
#include "quant/placement/runtime_forms.h"

namespace ptqkit {

struct QuantFormat;

struct PlacementOptions {
  std::vector<std::string> op_types_to_quantize;
  std::vector<std::string> op_types_to_exclude;
  std::vector<std::string> nodes_to_quantize;
  std::vector<std::string> nodes_to_exclude;
  // Nodes a search keeps in float (--accuracy_budget, --autotune): exact node names, never
  // patterns, each with the reason the report gives for it.
  std::map<std::string, std::string> kept_in_float;
  // The format's rules (quant/formats/formats.h): which ops beyond the compute ops are quantized and which
  // Convs stay float. Default: INT8's.
  const QuantFormat* format = &FindFormat("int8", "--quantize_mode");
  // dq_only: weights are stored quantized, replacing the float initializer. A node whose weight
  // may not be replaced (onnx/graph_editor.h WhyNotReplaceable: it is also a graph input) then
  // stays float, with the reason.
  bool replaces_weights = false;
  // When set, selectors that match a node are recorded here ("<option> <selector>") instead of
  // unmatched ones being warned about (see NodeSelector).
  std::set<std::string>* matched_selectors = nullptr;
  // Keep the attention core's MatMuls in float even when selectors bypass the rules (which keep
  // them in float anyway): ModelOpt's --disable_mha_qdq.
  bool disable_mha_qdq = false;
  // Weight-only profile of a format with dynamic block activations (nvfp4, mxfp8:
  // --quantize_activations): input A of each planned MatMul/Gemm is quantized too, in blocks along
  // its last axis (K), when K is a multiple of the block and the weight is float32.
  bool quantize_activations = false;
  // The runtime the output is for (--target_runtime; quant/placement/runtime_forms.h). A form with
  // quantize_op_outputs extends the rules' plan: the ops between quantized ones that have integer
  // kernels there join (not with nodes_to_quantize/op_types_to_quantize, which choose the nodes), and
  // the outputs of the plan's ops get Q/DQ where that runtime's kernels need them.
  // REQUIRES: the form EffectiveRuntimeForm gives for `format`.
  const RuntimeForm* runtime = &kTensorRtForm;
};

// One tensor that gets a Q/DQ pair, shared by every use listed.
struct QuantizedTensor {
  std::string tensor;
  bool is_weight = false;  // a constant: scales come from its values, not from calibration
  int axis = -1;           // per-channel axis for weights; -1 = per tensor
  // Weight-only profile: the weight's K axis, along which it is quantized in blocks (rank-2 for
  // MatMul, 1 for Gemm transB=1, else 0); every use is input 1 of a MatMul/Gemm, whose input 0 is
  // the activation the blocks' errors are weighed on. -1 otherwise.
  int block_axis = -1;
  // An embedding table (RuntimeForm::int8_embeddings): a constant [V, D] read as input 0 of Gathers
  // (axis 0) by run-time indices, stored as INT8 rows with one scale per row (axis 0).
  bool embedding = false;
  // An activation quantized in blocks along its last axis, each block's scale computed at run time
  // (quant/rewrite/dynamic_block_activation.h); its uses are input 0 of MatMul/Gemm nodes.
  bool dynamic_blocks = false;
  std::vector<TensorUse> uses;
  // Tensors with the same non-empty group share one scale (Concat inputs and output; the input and
  // output of an op a runtime runs on the integers unchanged).
  std::string scale_group;
  // Activations of a form with unsigned_activations: never negative (IsNonNegative), for every
  // tensor of its scale group, so it is stored with zero point 0 on all 255 steps.
  bool non_negative = false;
  // --mixed_precision int8,fp8: the format this tensor is quantized in when it is not the run's
  // (quant/rewrite/model_placement.h UseFormatFor); null: the run's.
  const QuantFormat* format = nullptr;
};

struct Placement {
  std::vector<QuantizedTensor> tensors;        // in order of first use
  std::vector<int> quantized_nodes;            // nodes with at least one Q/DQ input, in graph order
  std::map<int, std::string> float_reasons;    // candidate nodes left in float -> why

  // Names of the activation (non-weight) tensors, which calibration must observe.
  std::vector<std::string> ActivationTensors() const;
  // Drops an activation tensor from the plan (e.g. ONNX Runtime says it is not a float tensor).
  void DropTensor(const std::string& tensor, const GraphIndex& graph, const std::string& reason);
};

// Ranges of the plan's activation tensors, taken from per-tensor ranges (`tensor_amax`, e.g. from
// calibration); tensors of one scale group all get the group's widest range. Throws ptqkit::Error
// naming a tensor that has no range.
std::map<std::string, float> PlanRanges(const Placement& plan, const std::map<std::string, float>& tensor_amax);

// Throws ptqkit::Error for an invalid selector.
Placement PlanPlacement(const GraphIndex& graph, const PlacementOptions& options);
// The weight-only profile's plan (PlanPlacement calls it for a weight_only format); only the
// selectors of `options` apply.
Placement PlanWeightOnlyPlacement(const GraphIndex& graph, const PlacementOptions& options);

}  // namespace ptqkit
