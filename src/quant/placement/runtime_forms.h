// RuntimeForm: how the Q/DQ of an INT8 model are written for the runtime that will run it
// (--target_runtime), as data. Calibration, corrections and the loss report are the same for every
// form; only the placement's reach, the activations' storage type and how weights are stored differ.
//
// TensorRT (and OpenVINO, whose low-precision transformations read Q/DQ the same way) fuse a Q/DQ
// pair on the INPUTS of a Conv/MatMul into an integer kernel and choose the output precision
// themselves. ONNX Runtime's CPU provider does not: its QDQ fusions (QDQSelectorActionTransformer)
// turn a node into an integer kernel only when EVERY data input comes out of a DequantizeLinear and
// (for most ops) its only consumer is a QuantizeLinear, and on x86 only with uint8 activations
// (int8 ones are not fused there). So its form adds Q/DQ on the outputs of the quantized ops that
// feed other integer kernels, stores activations as uint8 and weights as int8 initializers.
// `kernels` lists, per op type, the integer kernel the runtime builds and the Q/DQ shape it needs;
// placement (quant/placement/placement.cc) reads it instead of naming runtimes.
//
// The rows are immutable static data that live for the whole program. Thread-safe.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <string_view>
#include <vector>

#include "onnx/graph_index.h"
#include "quant/formats/formats.h"

namespace ptqkit {

// The Q/DQ around a node that the runtime turns into an integer kernel.
enum class KernelPattern {
  // DQ on every data input (weights included), Q on the output optional (MatMul without it:
  // MatMulIntegerToFloat; Gemm: QGemm with a float output). Joins by the placement rules only.
  kInputsOutputOptional,
  // DQ on every data input and Q on the output, else the op runs in float (Conv: QLinearConv).
  // Joins by the placement rules only.
  kInputsAndOutput,
  // As kInputsAndOutput, for ops the rules do not quantize (Add, pooling, Concat): they join the
  // integer region when they sit between integer kernels.
  kBetweenKernels,
  // The op moves integers unchanged when its input and output share one scale and zero point
  // (MaxPool, Reshape, Transpose): DQ -> op -> Q is dropped, so the two tensors share a scale.
  kSameScale,
};

inline constexpr int64_t kMinEmbeddingElements = int64_t{1} << 16;

// TensorRT's rules for the ops next to quantized Convs/MatMuls: which of them get Q/DQ on their
// inputs so that the engine keeps them in INT8 (the forms that quantize op outputs grow integer
// regions from `kernels` instead).
enum class NeighbourRule : uint8_t {
  kResidualAdd,             // an Add joining a quantized Conv's output with another branch (every format)
  kAfterConv,               // input 0 when a quantized Conv produces it (through BatchNorm and activations)
  kAfterConvThroughLayout,  // the same, through Reshape/Transpose/Flatten/Squeeze/Unsqueeze as well
  kBetweenQuantized,        // input 0 when the op sits between quantized ops and is no Conv epilogue (pooling)
};

struct NeighbourOp {
  std::string_view op_type;
  NeighbourRule rule;
};

struct IntegerKernel {
  std::string_view op_type;
  std::string_view kernel;  // what the runtime runs it as, for the summary ("QLinearConv")
  KernelPattern pattern;
};

struct RuntimeForm {
  std::string_view name;  // the --target_runtime spelling
  // Q/DQ on the outputs of quantized ops (after a Relu/Clip the runtime folds into the kernel) and
  // on the ops between them that have integer kernels (`kernels`).
  bool quantize_op_outputs = false;
  // Activations stored as UINT8: a tensor that is never negative (after Relu, Clip(0, x), Sigmoid,
  // ...) uses zero point 0 and all 255 steps (scale amax/255, and a Relu/Clip before its Q becomes
  // redundant); another uses zero point 128 and the symmetric grid (scale amax/127, the same values
  // as INT8). Weights stay INT8, symmetric per channel.
  bool unsigned_activations = false;
  // Weights stored as quantized initializers with a DequantizeLinear (as --dq_only).
  bool integer_weights = false;
  // The runtime fuses exported GELUs (x * 0.5 * (1 + erf(x / sqrt 2))) only with their scalar
  // constants: activation smoothing leaves the final "* 0.5" alone and inserts its Mul after it
  // (measured on all-MiniLM-L6 in ONNX Runtime with dynamic MatMuls: an unfused GELU cost 1.5 ms
  // of 5.4; static, 3.77 ms fused against 3.89 ms folded).
  bool fuses_exported_gelu = false;
  // Large embedding tables (a Gather of a constant [V, D] float table by run-time indices, at least
  // kMinEmbeddingElements values) stored as INT8 rows, one scale per row, dequantized after the
  // Gather (only the rows gathered): a transformer's word embeddings are half its file.
  bool int8_embeddings = false;
  // A MatMul whose output stays float reads its input quantized at run time instead
  // (quant/rewrite/dynamic_matmul.h): the runtime's integer kernel then takes the bias Add too (all-MiniLM-L6
  // 2.26x FP32 against 2.1x static), but each output then depends on the other samples of its batch
  // (the range is the batch's): on 256 sentences run in batches of 8, nearest-neighbour agreement
  // with FP32 fell from 0.95 to 0.85. Not in the default ONNX Runtime row for that reason.
  bool dynamic_matmuls = false;
  // An activation Q/DQ of a Conv input that comes out of a layout op (Transpose, Reshape, Squeeze,
  // Unsqueeze, Flatten) read by nothing else goes on that op's input instead, so the layout op moves the
  // quantized values: OpenVINO's low-precision transformations then keep the Conv after it in i8
  // (TF-converted ResNet-50: 46 -> 52 of 54 Convs in i8, 1.39x -> 1.52x FP32), as NNCF places them.
  bool qdq_above_layout_ops = false;
  // Weight-only formats whose types ONNX Runtime's CPU kernels lack (nvfp4, mxfp8, mxfp4) are written
  // in containers it runs (quant/rewrite/ort_block_containers.h).
  bool ort_block_containers = false;
  // The runtime's integer kernels reached through Q/DQ; empty: every op follows the placement rules.
  const std::vector<IntegerKernel>* kernels = nullptr;
  // Rules for the ops around quantized Convs/MatMuls (nullptr: none).
  const std::vector<NeighbourOp>* neighbour_rules = nullptr;
};

// TensorRT's row, the plain form (the default of the options structs that take a form: an object,
// not a lookup, so that their default initialization calls nothing).
extern const RuntimeForm kTensorRtForm;

// The row named `name` ("trt", "ort_cpu", "ort_cpu_dynamic", "openvino"). Throws ptqkit::Error "unknown --target_runtime ..."
// listing the rows otherwise.
const RuntimeForm& FindRuntimeForm(std::string_view name);
// The row names, in table order.
std::vector<std::string> RuntimeFormNames();
// The form a run writes: `name`'s for INT8 (the format whose values these kernels take), TensorRT's
// plain form for every other format (FP8, weight-only), whose files are the same for every target.
const RuntimeForm& EffectiveRuntimeForm(std::string_view name, const QuantFormat& format);

// The integer kernel `form` builds for node `node`, or nullptr. REQUIRES: the model's opset is at
// least 13 (every INT8 output's is: per-channel Q/DQ), where all these fusions apply.
const IntegerKernel* FindIntegerKernel(const RuntimeForm& form, const onnx::NodeProto& node);
// The same by the op type of the default domain.
const IntegerKernel* FindIntegerKernel(const RuntimeForm& form, std::string_view op_type);

// The neighbour rule `form` has for node `node` (default domain), or nullptr.
const NeighbourOp* FindNeighbourRule(const RuntimeForm& form, const onnx::NodeProto& node);

// True for an elementwise activation `form` has no integer kernel for (HardSwish, HardSigmoid,
// Tanh, Erf, ...).
bool IsFloatOnlyActivation(const RuntimeForm& form, const onnx::NodeProto& node);

// The tensor a runtime quantizes as node `node`'s output: its output, or the output of the Relu or
// Clip (constant bounds) that is its only consumer, which the runtime folds into the kernel when
// the Q makes it redundant. Empty when the node has no single float output.
std::string KernelOutput(const GraphIndex& graph, int node);

// The node whose KernelOutput `tensor` is (its producer, or the node before a Relu/Clip it folds),
// or -1.
int KernelProducer(const GraphIndex& graph, const std::string& tensor);

// True when `tensor` can never hold a negative value, judged from the graph alone: the output of
// Relu, Clip with a constant min >= 0, Sigmoid, Softmax, or of an op that only moves or averages
// such values (MaxPool, AveragePool, Reshape, Concat of non-negative inputs, ...).
bool IsNonNegative(const GraphIndex& graph, const std::string& tensor);

}  // namespace ptqkit
