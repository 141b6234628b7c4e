#include "quant/placement/runtime_forms.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <limits>
#include <set>

#include "onnx/op_traits.h"
#include "ptqkit/error.h"

namespace ptqkit {
namespace {

// ONNX Runtime's CPU QDQ fusions (onnxruntime/core/optimizer/qdq_transformer/selectors_actions/
// qdq_selector_action_transformer.cc, 1.2x-1.3x): the op types it registers and the kernels they become.
const std::vector<IntegerKernel> kOrtCpuKernels = {
    {"Conv", "QLinearConv", KernelPattern::kInputsAndOutput},
    {"MatMul", "DynamicQuantizeMatMul / MatMulIntegerToFloat / QLinearMatMul", KernelPattern::kInputsOutputOptional},
    {"Gemm", "QGemm", KernelPattern::kInputsOutputOptional},
    {"Add", "QLinearAdd", KernelPattern::kBetweenKernels},
    {"Mul", "QLinearMul", KernelPattern::kBetweenKernels},
    {"GlobalAveragePool", "QLinearGlobalAveragePool", KernelPattern::kBetweenKernels},
    {"AveragePool", "QLinearAveragePool", KernelPattern::kBetweenKernels},
    {"Concat", "QLinearConcat", KernelPattern::kBetweenKernels},
    {"MaxPool", "MaxPool (uint8)", KernelPattern::kSameScale},
    {"Reshape", "Reshape (uint8)", KernelPattern::kSameScale},
    {"Transpose", "Transpose (uint8)", KernelPattern::kSameScale},
    {"Squeeze", "Squeeze (uint8)", KernelPattern::kSameScale},
    {"Unsqueeze", "Unsqueeze (uint8)", KernelPattern::kSameScale},
    {"Resize", "Resize (uint8)", KernelPattern::kSameScale},
    {"Gather", "Gather (uint8, or of INT8 embedding rows)", KernelPattern::kSameScale},
};

// TensorRT's neighbours (OpenVINO reads its form alike).
const std::vector<NeighbourOp> kTensorRtNeighbours = {
    {"Add", NeighbourRule::kResidualAdd},
    {"Resize", NeighbourRule::kAfterConv},
    {"LayerNormalization", NeighbourRule::kAfterConvThroughLayout},
    {"MaxPool", NeighbourRule::kBetweenQuantized},
    {"AveragePool", NeighbourRule::kBetweenQuantized},
    {"GlobalAveragePool", NeighbourRule::kBetweenQuantized},
    {"GlobalMaxPool", NeighbourRule::kBetweenQuantized},
};

// ONNX Runtime's CPU rows differ only in where MatMuls with a float output get their input's range.
// Both keep GELU fusable: a GELU output is then smoothed by an inserted Mul (all-MiniLM-L6, static
// form: 3.77 ms against 3.89 ms with the constant folded, the same accuracy).
RuntimeForm OrtCpuForm(std::string_view name, bool dynamic_matmuls) {
  return {.name = name,
          .quantize_op_outputs = true,
          .unsigned_activations = true,
          .integer_weights = true,
          .fuses_exported_gelu = true,
          .int8_embeddings = true,
          .dynamic_matmuls = dynamic_matmuls,
          .ort_block_containers = true,
          .kernels = &kOrtCpuKernels};
}

const RuntimeForm kOrtCpuForm = OrtCpuForm("ort_cpu", false);
// Faster on encoders; each sample's output depends on the rest of its batch (runtime_forms.h).
const RuntimeForm kOrtCpuDynamicForm = OrtCpuForm("ort_cpu_dynamic", true);

// OpenVINO reads TensorRT's form; its Q/DQ go above layout ops, and it fuses exported GELUs as
// ONNX Runtime does.
const RuntimeForm kOpenVinoForm = {.name = "openvino",
                                   .fuses_exported_gelu = true,
                                   .qdq_above_layout_ops = true,
                                   .neighbour_rules = &kTensorRtNeighbours};

const std::vector<const RuntimeForm*> kForms = {&kTensorRtForm, &kOrtCpuForm, &kOrtCpuDynamicForm, &kOpenVinoForm};

// The constant bound of a Clip (attribute before opset 11, input from 11), or `fallback`.
float ClipBound(const GraphIndex& graph, const onnx::NodeProto& n, int input, const char* attribute, float fallback) {
  if (n.input_size() > input && !n.input(input).empty()) {
    const onnx::TensorProto* c = graph.Constant(n.input(input));
    if (c == nullptr || ElementCount(*c) != 1) return std::numeric_limits<float>::quiet_NaN();
    return TensorToFloats(*c).front();
  }
  return FloatAttribute(n, attribute, fallback);
}

// A Relu, or a Clip whose constant min is 0, before a Q with zero point 0 on the uint8 grid: the
// runtime drops it (IsClipMadeRedundantByQ), since the Q clamps to the same range. A Clip with
// another min would not be dropped and would keep the kernel from fusing.
bool IsRedundantBeforeQ(const GraphIndex& graph, const onnx::NodeProto& n) {
  if (HasFlag(n, OpFlag::kRectifies)) return true;
  if (!HasFlag(n, OpFlag::kClampsToBounds)) return false;
  const float lo = ClipBound(graph, n, 1, "min", -std::numeric_limits<float>::max());
  const float hi = ClipBound(graph, n, 2, "max", std::numeric_limits<float>::max());
  return lo == 0.0f && hi == hi && hi > 0.0f;  // hi NaN: computed at run time
}

bool NonNegative(const GraphIndex& graph, const std::string& tensor, int depth) {
  const int p = graph.Producer(tensor);
  if (p < 0 || depth > 16) return false;
  const auto& n = graph.node(p);
  const std::string& op = n.op_type();
  const OpTraits& traits = TraitsOf(op);
  if (traits.Has(OpFlag::kNeverNegative)) return true;
  if (traits.Has(OpFlag::kClampsToBounds)) return ClipBound(graph, n, 1, "min", -1.0f) >= 0.0f;
  if (!traits.Has(OpFlag::kKeepsSign) || n.input_size() == 0) return false;
  // A Pad with a negative constant, or a Concat of any signed input, may bring negatives.
  if (traits.Has(OpFlag::kPadsBorder) && n.input_size() > 2 && !n.input(2).empty()) {
    const onnx::TensorProto* c = graph.Constant(n.input(2));
    if (c == nullptr || TensorToFloats(*c).front() < 0.0f) return false;
  }
  for (int j : DataInputIndices(traits, n)) {
    if (!NonNegative(graph, n.input(j), depth + 1)) return false;
  }
  return true;
}

}  // namespace

// TensorRT's explicit quantization (OpenVINO reads it alike): Q/DQ on the inputs of Conv, MatMul, Gemm
// and the ops the placement rules name; symmetric INT8 activations; every flag off.
const RuntimeForm kTensorRtForm = {.name = "trt", .neighbour_rules = &kTensorRtNeighbours};

const RuntimeForm& FindRuntimeForm(std::string_view name) {
  for (const RuntimeForm* form : kForms) {
    if (form->name == name) return *form;
  }
  throw Error(fmt::format("unknown --target_runtime '{}' (expected {})", name, fmt::join(RuntimeFormNames(), " or ")));
}

std::vector<std::string> RuntimeFormNames() {
  std::vector<std::string> names;
  for (const RuntimeForm* form : kForms) names.emplace_back(form->name);
  return names;
}

const RuntimeForm& EffectiveRuntimeForm(std::string_view name, const QuantFormat& format) {
  const RuntimeForm& form = FindRuntimeForm(name);
  const bool int8 = format.storage_type == onnx::TensorProto::INT8 && !format.placement.weight_only;
  return int8 ? form : kTensorRtForm;
}

const NeighbourOp* FindNeighbourRule(const RuntimeForm& form, const onnx::NodeProto& node) {
  if (form.neighbour_rules == nullptr || !(node.domain().empty() || node.domain() == "ai.onnx")) return nullptr;
  for (const NeighbourOp& row : *form.neighbour_rules) {
    if (row.op_type == node.op_type()) return &row;
  }
  return nullptr;
}

const IntegerKernel* FindIntegerKernel(const RuntimeForm& form, const onnx::NodeProto& node) {
  return node.domain().empty() ? FindIntegerKernel(form, node.op_type()) : nullptr;
}

const IntegerKernel* FindIntegerKernel(const RuntimeForm& form, std::string_view op_type) {
  if (form.kernels == nullptr) return nullptr;
  for (const auto& k : *form.kernels) {
    if (k.op_type == op_type) return &k;
  }
  return nullptr;
}

bool IsFloatOnlyActivation(const RuntimeForm& form, const onnx::NodeProto& node) {
  static const std::set<std::string> kActivations = {"HardSwish", "HardSigmoid", "Tanh", "Elu",  "Selu",     "Softplus",
                                                     "PRelu",     "Erf",         "Gelu", "Mish", "Celu",     "Softsign"};
  return node.domain().empty() && kActivations.count(node.op_type()) > 0 && FindIntegerKernel(form, node) == nullptr;
}

std::string KernelOutput(const GraphIndex& graph, int node) {
  const auto& n = graph.node(node);
  if (n.output_size() != 1 || n.output(0).empty()) return "";
  const std::string& out = n.output(0);
  const auto& uses = graph.Consumers(out);
  if (uses.size() == 1 && !graph.IsGraphOutput(out)) {
    const auto& next = graph.node(uses[0].node);
    if (uses[0].input == 0 && next.output_size() == 1 && IsRedundantBeforeQ(graph, next)) return next.output(0);
  }
  return out;
}

int KernelProducer(const GraphIndex& graph, const std::string& tensor) {
  const int p = graph.Producer(tensor);
  if (p < 0) return -1;
  if (graph.node(p).input_size() > 0) {  // a Relu/Clip the node before it folds: that node
    const int before = graph.Producer(graph.node(p).input(0));
    if (before >= 0 && KernelOutput(graph, before) == tensor) return before;
  }
  return KernelOutput(graph, p) == tensor ? p : -1;
}

bool IsNonNegative(const GraphIndex& graph, const std::string& tensor) { return NonNegative(graph, tensor, 0); }

}  // namespace ptqkit
