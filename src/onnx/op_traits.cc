#include "onnx/op_traits.h"

#include <algorithm>
#include <string>
#include <unordered_map>

#include "onnx/graph_index.h"

namespace ptqkit {
namespace {

constexpr uint32_t kFirst = 1u;             // input 0 only
constexpr uint32_t kFirstTwo = 0b11u;       // Gemm: A and B (C is a bias)
constexpr uint32_t kSecondThird = 0b110u;   // Where: the two values, not the condition

constexpr uint16_t kMoves = kKeepsSign | kReshapes;
constexpr uint16_t kScanned = kSensitivityScope;
constexpr uint16_t kConvTail = kConvActivation | kRegionTail;

constexpr OpTraits Row(std::string_view op, OpRole role, uint32_t data = kAllInputs, uint16_t flags = 0) {
  return OpTraits{.op_type = op, .role = role, .data_inputs = data, .flags = flags};
}
constexpr OpTraits Linear(std::string_view op, uint32_t data, WeightLayoutKind layout, int8_t bias) {
  return OpTraits{.op_type = op, .role = OpRole::kLinear, .data_inputs = data, .weight_input = 1,
                  .bias_input = bias, .weight_layout = layout, .flags = kScanned};
}

constexpr OpTraits ControlFlow(std::string_view op, SubgraphOutputs outputs) {
  return OpTraits{.op_type = op, .role = OpRole::kControlFlow, .subgraph_outputs = outputs};
}

// One row per op type that any stage treats apart from "some op". Data inputs: what
// quant/placement/placement.cc may put an activation Q/DQ on. The flag columns keep the lists the stages had
// before this table exactly (graph_patterns' Conv activations, autotune's region tails, the scan's
// default scope: ONNX Runtime's QDQ quantizer's ops, activations, normalization, fusible reductions).
const OpTraits kRows[] = {
    Linear("Conv", kFirst, WeightLayoutKind::kConv, 2),
    Linear("ConvTranspose", kFirst, WeightLayoutKind::kConvTranspose, 2),
    Linear("Gemm", kFirstTwo, WeightLayoutKind::kGemm, 2),
    Linear("MatMul", kAllInputs, WeightLayoutKind::kMatMul, -1),

    Row("Add", OpRole::kElementwise, kAllInputs, kRegionTail | kScanned),
    Row("Sub", OpRole::kElementwise, kAllInputs, kRegionTail | kScanned),
    Row("Mul", OpRole::kElementwise, kAllInputs, kRegionTail | kScanned),
    Row("Div", OpRole::kElementwise, kAllInputs, kRegionTail | kScanned),
    Row("Pow", OpRole::kElementwise, kAllInputs, kScanned), Row("Sum", OpRole::kElementwise),
    Row("Einsum", OpRole::kOther, kAllInputs, kScanned),
    Row("Where", OpRole::kElementwise, kSecondThird, kScanned),

    Row("Reshape", OpRole::kLayout, kFirst, kMoves), Row("Transpose", OpRole::kLayout, kFirst, kMoves),
    Row("Squeeze", OpRole::kLayout, kFirst, kMoves), Row("Unsqueeze", OpRole::kLayout, kFirst, kMoves),
    Row("Flatten", OpRole::kLayout, kFirst, kMoves), Row("Identity", OpRole::kLayout, kFirst, kKeepsSign | kNoOp),
    Row("Slice", OpRole::kLayout, kFirst, kKeepsSign),
    Row("Pad", OpRole::kLayout, kFirst, kKeepsSign | kPadsBorder | kScanned),
    Row("Split", OpRole::kLayout, kFirst, kKeepsSign), Row("Resize", OpRole::kLayout, kFirst, kKeepsSign | kScanned),
    Row("Concat", OpRole::kLayout, kAllInputs, kKeepsSign | kConcatenates), Row("Upsample", OpRole::kLayout, kFirst),
    Row("Gather", OpRole::kLayout, kFirst), Row("GatherElements", OpRole::kLayout, kFirst),
    Row("GatherND", OpRole::kLayout, kFirst), Row("Expand", OpRole::kLayout, kFirst),
    Row("Tile", OpRole::kLayout, kFirst), Row("DepthToSpace", OpRole::kLayout, kFirst),
    Row("SpaceToDepth", OpRole::kLayout, kFirst),

    Row("Relu", OpRole::kActivation, kFirst, kNeverNegative | kRectifies | kConvTail | kScanned),
    Row("Sigmoid", OpRole::kActivation, kFirst, kNeverNegative | kUnitInterval | kConvTail | kScanned),
    Row("Clip", OpRole::kActivation, kFirst, kClampsToBounds | kConvTail | kScanned),
    Row("LeakyRelu", OpRole::kActivation, kFirst, kConvTail | kScanned),
    Row("PRelu", OpRole::kActivation, kAllInputs, kConvTail | kScanned),
    Row("HardSigmoid", OpRole::kActivation, kFirst, kUnitInterval | kConvTail | kScanned),
    Row("HardSwish", OpRole::kActivation, kFirst, kConvTail | kScanned),
    Row("Tanh", OpRole::kActivation, kFirst, kConvTail | kScanned),
    Row("Elu", OpRole::kActivation, kFirst, kConvTail | kScanned),
    Row("Selu", OpRole::kActivation, kFirst, kConvTail | kScanned),
    Row("Softplus", OpRole::kActivation, kFirst, kConvActivation | kScanned),
    Row("Erf", OpRole::kActivation, kFirst, kRegionTail | kScanned),
    Row("Gelu", OpRole::kActivation, kFirst, kRegionTail | kScanned),
    Row("Mish", OpRole::kActivation, kFirst, kScanned), Row("Sqrt", OpRole::kActivation, kFirst, kScanned),
    Row("Exp", OpRole::kActivation, kFirst, kScanned),
    Row("Dropout", OpRole::kOther, kFirst), Row("Cast", OpRole::kOther, kFirst),

    Row("BatchNormalization", OpRole::kNormalization, kFirst, kFoldsIntoConv | kRegionTail | kScanned),
    Row("LayerNormalization", OpRole::kNormalization, kFirst, kScanned),
    Row("InstanceNormalization", OpRole::kNormalization, kFirst, kScanned),
    Row("GroupNormalization", OpRole::kNormalization, kFirst, kScanned),

    Row("MaxPool", OpRole::kPooling, kFirst, kKeepsSign | kRegionTail | kScanned),
    Row("AveragePool", OpRole::kPooling, kFirst, kKeepsSign | kRegionTail | kScanned),
    Row("GlobalAveragePool", OpRole::kPooling, kFirst, kKeepsSign | kRegionTail | kScanned),
    Row("GlobalMaxPool", OpRole::kPooling, kFirst, kKeepsSign | kScanned),

    Row("ReduceMean", OpRole::kReduction, kFirst, kScanned), Row("ReduceSum", OpRole::kReduction, kFirst, kScanned),
    Row("ReduceMax", OpRole::kReduction, kFirst, kKeepsSign | kScanned),
    Row("ReduceMin", OpRole::kReduction, kFirst, kScanned),
    Row("ReduceProd", OpRole::kReduction, kFirst), Row("ReduceL2", OpRole::kReduction, kFirst, kScanned),
    Row("TopK", OpRole::kReduction, kFirst), Row("ArgMax", OpRole::kReduction, kFirst, kScanned),

    Row("Softmax", OpRole::kSoftmax, kFirst, kNeverNegative | kScanned),
    Row("LogSoftmax", OpRole::kOther, kFirst, kScanned),

    Row("QuantizeLinear", OpRole::kQuantize), Row("DequantizeLinear", OpRole::kDequantize),
    Row("Constant", OpRole::kConstant),
    Row("Shape", OpRole::kShape), Row("Size", OpRole::kShape),
    ControlFlow("If", SubgraphOutputs::kBranchOutputs), ControlFlow("Loop", SubgraphOutputs::kLoopOutputs),
    ControlFlow("Scan", SubgraphOutputs::kScanOutputs),
};

constexpr OpTraits kUnknown{};

const std::unordered_map<std::string_view, const OpTraits*>& Table() {
  static const auto* table = [] {
    auto* t = new std::unordered_map<std::string_view, const OpTraits*>();
    for (const OpTraits& row : kRows) t->emplace(row.op_type, &row);
    return t;
  }();
  return *table;
}

bool InDefaultDomain(const onnx::NodeProto& node) { return node.domain().empty() || node.domain() == "ai.onnx"; }

}  // namespace

const OpTraits& TraitsOf(std::string_view op_type) {
  auto it = Table().find(op_type);
  return it == Table().end() ? kUnknown : *it->second;
}

const OpTraits& TraitsOf(const onnx::NodeProto& node) {
  return InDefaultDomain(node) ? TraitsOf(std::string_view(node.op_type())) : kUnknown;
}

bool HasRole(const onnx::NodeProto& node, OpRole role) {
  const OpTraits& t = TraitsOf(node);
  return &t != &kUnknown && t.role == role;
}

bool HasFlag(const onnx::NodeProto& node, OpFlag flag) { return TraitsOf(node).Has(flag); }

bool IsLinearOp(const onnx::NodeProto& node) { return HasRole(node, OpRole::kLinear); }

bool IsConvolution(const onnx::NodeProto& node) {
  const WeightLayoutKind k = TraitsOf(node).weight_layout;
  return k == WeightLayoutKind::kConv || k == WeightLayoutKind::kConvTranspose;
}

bool IsQdqOp(const onnx::NodeProto& node) {
  return HasRole(node, OpRole::kQuantize) || HasRole(node, OpRole::kDequantize);
}

std::vector<int> DataInputIndices(const onnx::NodeProto& node) { return DataInputIndices(TraitsOf(node), node); }

std::vector<int> DataInputIndices(const OpTraits& traits, const onnx::NodeProto& node) {
  const uint32_t mask = traits.data_inputs;
  std::vector<int> inputs;
  for (int i = 0; i < node.input_size() && i < 32; ++i) {
    if (mask & (1u << i)) inputs.push_back(i);
  }
  for (int i = 32; i < node.input_size() && mask == kAllInputs; ++i) inputs.push_back(i);
  return inputs;
}

WeightLayout WeightLayoutOf(const onnx::NodeProto& node, const std::vector<int64_t>& dims) {
  WeightLayout w;
  const int rank = static_cast<int>(dims.size());
  if (rank < 2) return w;
  switch (TraitsOf(node).weight_layout) {
    case WeightLayoutKind::kNone:
      return w;
    case WeightLayoutKind::kConv: {
      const int64_t group = IntAttribute(node, "group", 1);
      return {.out_axis = 0, .in_axis = 1, .out_channels = dims[0], .in_channels = dims[1] * group};
    }
    case WeightLayoutKind::kConvTranspose: {
      const int64_t group = IntAttribute(node, "group", 1);
      return {.out_axis = 1, .in_axis = 0, .out_channels = dims[1] * group, .in_channels = dims[0]};
    }
    case WeightLayoutKind::kGemm: {
      if (rank != 2) return w;  // the ONNX spec's Gemm takes matrices only
      // The one place that reads Gemm's transB: [N, K] with it, [K, N] without.
      const bool trans_b = IntAttribute(node, "transB", 0) != 0;
      w.out_axis = trans_b ? 0 : 1;
      w.in_axis = trans_b ? 1 : 0;
      w.transposed_input = IntAttribute(node, "transA", 0) != 0;
      break;
    }
    case WeightLayoutKind::kMatMul:
      w.out_axis = rank - 1;
      w.in_axis = rank - 2;
      break;
  }
  w.out_channels = dims[w.out_axis];
  w.in_channels = dims[w.in_axis];
  return w;
}

int WeightOutputAxis(const onnx::NodeProto& node, int weight_rank) {
  return WeightLayoutOf(node, std::vector<int64_t>(static_cast<size_t>(std::max(weight_rank, 0)), 1)).out_axis;
}

WeightLayout WeightLayoutOf(const onnx::NodeProto& node, const onnx::TensorProto& weight) {
  return WeightLayoutOf(node, std::vector<int64_t>(weight.dims().begin(), weight.dims().end()));
}

}  // namespace ptqkit
