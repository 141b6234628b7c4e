#include "quant/rewrite/fp16_types.h"

#include <string_view>

#include "onnx/onnx_library.h"

namespace ptqkit {
namespace {

constexpr int32_t kBfloat16 = onnx::TensorProto::BFLOAT16;

// Ops whose ONNX schema at opset 19 (Gelu: 20) accepts float16 on every float input/output (but
// the separately typed slots of InputStaysFloat/OutputStaysFloat) and that ONNX Runtime 1.32's CPU
// provider ran in float16 when we tried each one (it casts internally where it has no fp16
// kernel). Not here, hence float32: Celu and Range (no fp16 in ONNX), IsInf (fp16 from opset 20
// only), control flow, random generators, CastLike, and ops nobody has checked yet.
const std::set<std::string> kFloat16Ops = {
    "Abs", "Add", "ArgMax", "ArgMin", "AveragePool", "BatchNormalization", "Cast", "Ceil", "Clip", "Compress",
    "Concat", "ConstantOfShape", "Conv", "ConvTranspose", "Cos", "CumSum", "DepthToSpace", "DequantizeLinear",
    "Div", "Dropout", "Einsum", "Elu", "Equal", "Erf", "Exp", "Expand", "Flatten", "Floor", "Gather",
    "GatherElements", "GatherND", "Gelu", "Gemm", "GlobalAveragePool", "GlobalMaxPool", "Greater",
    "GreaterOrEqual", "GroupNormalization", "HardSigmoid", "HardSwish", "Hardmax", "Identity",
    "InstanceNormalization", "IsNaN", "LRN", "LayerNormalization", "LeakyRelu", "Less", "LessOrEqual", "Log",
    "LogSoftmax", "LpNormalization", "MatMul", "Max", "MaxPool", "Mean", "MeanVarianceNormalization", "Min",
    "Mish", "Mod", "Mul", "Neg", "NonZero", "PRelu", "Pad", "Pow", "QuantizeLinear", "Reciprocal", "ReduceL1",
    "ReduceL2", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum",
    "ReduceSumSquare", "Relu", "Reshape", "Resize", "Round", "ScatterElements", "ScatterND", "Selu", "Shape",
    "Sigmoid", "Sign", "Sin", "Size", "Slice", "Softmax", "Softplus", "Softsign", "SpaceToDepth", "Split",
    "Sqrt", "Squeeze", "Sub", "Sum", "Tanh", "ThresholdedRelu", "Tile", "Transpose", "Trilu", "Unsqueeze",
    "Where"};

// Of those, the ones whose opset-19 schema has no bfloat16 (ONNX Runtime's CPU provider runs
// almost nothing in bfloat16, so for bf16 the schema is the only rule).
const std::set<std::string> kNoBfloat16 = {
    "AveragePool", "Compress", "ConstantOfShape", "Conv", "ConvTranspose", "Cos", "Einsum", "Elu",
    "GlobalAveragePool", "GlobalMaxPool", "HardSigmoid", "HardSwish", "InstanceNormalization", "LpNormalization",
    "MaxPool", "Mish", "Round", "Selu", "Sin", "Softplus", "Softsign", "ThresholdedRelu"};


// The slots of an op typed apart from its main float type, as data. Bit i: input (output) slot i.
struct SlotTypes {
  std::string_view op;
  uint32_t float32_inputs = 0;       // stay float32 (Resize's scales)
  uint32_t float32_inputs_bf16 = 0;  // stay float32 when the low type is bfloat16 (its schema lacks it there)
  uint32_t float32_outputs = 0;      // keep the stash type, float32 (LayerNormalization's Mean, InvStdDev)
  uint32_t any_type_inputs = 0;      // take whatever type the tensor has (Cast, Shape, Size)
  OutputTypeSource output_type = OutputTypeSource::kInputs;
};

const SlotTypes kSlotTypes[] = {
    {.op = "Resize", .float32_inputs = 0b100, .float32_inputs_bf16 = 0b010},
    {.op = "Dropout", .float32_inputs_bf16 = 0b010},
    {.op = "LayerNormalization", .float32_outputs = ~1u},
    {.op = "Cast", .any_type_inputs = 0b1, .output_type = OutputTypeSource::kToAttribute},
    {.op = "Shape", .any_type_inputs = 0b1},
    {.op = "Size", .any_type_inputs = 0b1},
    {.op = "ConstantOfShape", .output_type = OutputTypeSource::kValueAttribute},
};

const SlotTypes& SlotTypesOf(std::string_view op) {
  static constexpr SlotTypes kPlain{};
  for (const SlotTypes& row : kSlotTypes) {
    if (row.op == op) return row;
  }
  return kPlain;
}

bool Bit(uint32_t mask, int slot) { return slot >= 0 && slot < 32 && (mask >> slot) & 1u; }

}  // namespace

bool InputStaysFloat(const std::string& op, int slot, int32_t low) {
  const SlotTypes& t = SlotTypesOf(op);
  return Bit(t.float32_inputs, slot) || (low == kBfloat16 && Bit(t.float32_inputs_bf16, slot));
}

bool OutputStaysFloat(const std::string& op, int slot) { return Bit(SlotTypesOf(op).float32_outputs, slot); }

bool AnyTypeInput(const std::string& op, int slot) { return Bit(SlotTypesOf(op).any_type_inputs, slot); }

OutputTypeSource OutputTypeOf(const std::string& op) { return SlotTypesOf(op).output_type; }

// Element type of every tensor of the top-level graph, from the ONNX library's shape inference
// (declared inputs, initializers, inferred value_info and outputs). A tensor the library cannot
// type (an op of another domain) is absent, and the nodes touching it stay float32.
std::map<std::string, int32_t> InferElemTypes(onnx::ModelProto* model) {
  const onnx::ModelProto inferred = onnxio::InferShapes(model);
  const onnx::GraphProto& g = inferred.graph();
  std::map<std::string, int32_t> types;
  auto add = [&](const onnx::ValueInfoProto& v) {
    if (v.type().has_tensor_type() && v.type().tensor_type().elem_type() != 0) {
      types[v.name()] = v.type().tensor_type().elem_type();
    }
  };
  for (const auto& v : g.input()) add(v);
  for (const auto& v : g.value_info()) add(v);
  for (const auto& v : g.output()) add(v);
  for (const auto& t : g.initializer()) types[t.name()] = t.data_type();
  for (const auto& s : g.sparse_initializer()) types[s.values().name()] = s.values().data_type();
  return types;
}


const std::set<std::string>& LowPrecisionOpTypes(int32_t type) {
  static const std::set<std::string> bf16 = [] {
    std::set<std::string> s;
    for (const auto& op : kFloat16Ops)
      if (!kNoBfloat16.count(op)) s.insert(op);
    return s;
  }();
  return type == kBfloat16 ? bf16 : kFloat16Ops;
}

}  // namespace ptqkit
