// OpTraits: what ptqkit knows about each ONNX operator, as one table of data: which inputs carry float
// data, where a weight and a bias sit and how the weight is laid out (Gemm's transB, grouped Conv and
// ConvTranspose included), and the role the op plays. Placement, canonicalization folds, weight
// rounding, bias correction, autotune regions and the scan's scope read it instead of comparing op
// types. Which runtime has an integer kernel for an op is the runtime's row (quant/placement/runtime_forms.h).
//
// Only the default ONNX domain ("" or "ai.onnx") is described; a node of any other domain gets the
// row of an unknown op (role kOther, every input data, no weight).
//
// The rows are immutable static data. Thread-safe.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string_view>
#include <vector>

namespace ptqkit {

enum class OpRole : uint8_t {
  kLinear,         // Conv, ConvTranspose, Gemm, MatMul: a weight (or second operand) contracted with the input
  kElementwise,    // Add, Mul, Sub, Div, Where, ...: values combined position by position
  kLayout,         // Reshape, Transpose, Squeeze, ...: values moved, never changed
  kActivation,     // Relu, Clip, Sigmoid, Erf, ...: one value in, one out
  kNormalization,  // BatchNormalization, LayerNormalization, ...
  kPooling,        // MaxPool, AveragePool and their global forms
  kReduction,      // ReduceMean, ReduceMax, ...
  kSoftmax,        // Softmax
  kQuantize,       // QuantizeLinear
  kDequantize,     // DequantizeLinear
  kConstant,       // Constant
  kShape,          // Shape, Size: read only the shape of their input
  kControlFlow,    // If, Loop, Scan
  kOther,
};

// How a linear op's weight (input 1) is laid out.
enum class WeightLayoutKind : uint8_t {
  kNone,
  kConv,           // [Cout, Cin / group, k...]
  kConvTranspose,  // [Cin, Cout / group, k...]
  kGemm,           // [K, N], or [N, K] with transB
  kMatMul,         // [..., K, N]
};

// Facts about an op that several stages read, as bits of OpTraits::flags.
enum OpFlag : uint16_t {
  kNeverNegative = 1 << 0,   // the output is never negative whatever the input (Relu, Sigmoid, Softmax)
  kKeepsSign = 1 << 1,       // the output is non-negative when every data input is (moves, selects, averages)
  kReshapes = 1 << 2,        // every value kept, only the layout changes (Reshape, Transpose, Flatten, ...)
  kConvActivation = 1 << 3,  // an activation TensorRT fuses into the Conv before it
  kRegionTail = 1 << 4,      // fused into, or run right after, a Conv/MatMul (autotune regions take it along)
  kFoldsIntoConv = 1 << 5,   // folded into the Conv before it (BatchNormalization)
  kConcatenates = 1 << 6,    // the output is its inputs side by side (TensorRT wants them on one scale)
  kNoOp = 1 << 7,            // the output is the input (Identity)
  kPadsBorder = 1 << 8,      // adds a border (mode "constant": input 2, or attribute "value" before opset 11)
  kRectifies = 1 << 9,       // max(x, 0) (Relu): a Q with zero point 0 on the unsigned grid makes it redundant
  kClampsToBounds = 1 << 10, // clamps to [min, max]: attributes before opset 11, inputs 1 and 2 from it (Clip)
  kUnitInterval = 1 << 11,   // the output lies in [0, 1] whatever the input (Sigmoid, HardSigmoid)
  kSensitivityScope = 1 << 12,  // scanned by default (quantizable compute, activations, normalization, reductions)
};

// What a control-flow op's subgraph outputs become on the op (onnx/subgraphs.cc exposes tensors).
enum class SubgraphOutputs : uint8_t {
  kNone,
  kBranchOutputs,  // If: each branch writes the op's outputs, so both branches need every output
  kLoopOutputs,    // Loop: extra body outputs are scan outputs, no attribute to extend
  kScanOutputs,    // Scan: extra body outputs are scan outputs, with an axis and a direction each
};

struct OpTraits {
  std::string_view op_type;
  OpRole role = OpRole::kOther;
  // Bit i set: input i carries float data that a Q/DQ may quantize (the rest are shapes, indices,
  // axes, scales ...). kAllInputs: every input.
  uint32_t data_inputs = ~0u;
  int8_t weight_input = -1;  // the input a linear op's weight sits on, or -1
  int8_t bias_input = -1;    // the bias input, or -1
  WeightLayoutKind weight_layout = WeightLayoutKind::kNone;
  uint16_t flags = 0;  // OpFlag bits
  SubgraphOutputs subgraph_outputs = SubgraphOutputs::kNone;

  bool Has(OpFlag flag) const { return (flags & flag) != 0; }
};

inline constexpr uint32_t kAllInputs = ~0u;

// The node's row (the unknown-op row for an op the table lacks or another domain).
const OpTraits& TraitsOf(const onnx::NodeProto& node);
// The row of op type `op_type` in the default domain.
const OpTraits& TraitsOf(std::string_view op_type);

// True when `node` is of the default domain and has role `role`.
bool HasRole(const onnx::NodeProto& node, OpRole role);
// True when `node`'s row has `flag` (false for an op of another domain).
bool HasFlag(const onnx::NodeProto& node, OpFlag flag);
// Conv, ConvTranspose, Gemm or MatMul of the default domain.
bool IsLinearOp(const onnx::NodeProto& node);
// Conv or ConvTranspose of the default domain.
bool IsConvolution(const onnx::NodeProto& node);
// QuantizeLinear or DequantizeLinear of the default domain.
bool IsQdqOp(const onnx::NodeProto& node);
// The indices of `node`'s inputs that carry float data (existing inputs only).
std::vector<int> DataInputIndices(const onnx::NodeProto& node);
// The same by a row already looked up (TraitsOf(op_type) reads a node of any domain as its op type).
std::vector<int> DataInputIndices(const OpTraits& traits, const onnx::NodeProto& node);

// The weight of a linear node, read from its layout and its dims. Every field is -1 when the node
// has no weight layout or the dims do not fit it.
struct WeightLayout {
  int out_axis = -1;        // the axis of output channels (one scale per entry)
  int in_axis = -1;         // the reduction (K / input-channel) axis
  int64_t out_channels = -1;  // output channels of the whole op (all groups)
  int64_t in_channels = -1;   // input channels of the whole op (all groups); K for Gemm/MatMul
  bool transposed_input = false;  // Gemm with transA: the activation is [K, M]
};
WeightLayout WeightLayoutOf(const onnx::NodeProto& node, const std::vector<int64_t>& weight_dims);
// The output-channel axis of a weight of rank `weight_rank` (when only the rank is known), or -1.
int WeightOutputAxis(const onnx::NodeProto& node, int weight_rank);
WeightLayout WeightLayoutOf(const onnx::NodeProto& node, const onnx::TensorProto& weight);

}  // namespace ptqkit
