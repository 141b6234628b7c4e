#include "quant/fp16_types.h"

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

}  // namespace

// Inputs typed separately from the op's main type that must stay float32.
bool InputStaysFloat(const std::string& op, int slot, int32_t low) {
  if (op == "Resize") return slot == 2 || (slot == 1 && low == kBfloat16);  // scales: float only
  if (op == "Dropout") return slot == 1 && low == kBfloat16;                // ratio: no bfloat16
  return false;
}

// LayerNormalization's Mean and InvStdDev have the stash type (float32 by default).
bool OutputStaysFloat(const std::string& op, int slot) { return op == "LayerNormalization" && slot >= 1; }

bool AnyTypeInput(const std::string& op, int slot) { return slot == 0 && (op == "Cast" || op == "Shape" || op == "Size"); }

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
