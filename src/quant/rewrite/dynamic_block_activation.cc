#include "quant/rewrite/dynamic_block_activation.h"

#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "ptqkit/error.h"
#include "quant/formats/block_codec.h"
#include "quant/formats/numerics.h"

namespace ptqkit {
namespace {

constexpr const char* kTrtDomain = "trt";
constexpr const char* kTrtMxfp8Dequantize = "TRT_MXFP8DequantizeLinear";
constexpr float kMinPowerOfTwoScale = 0x1p-126f;  // mxfp8's block scale floor (float32's least normal)

// Appends the nodes of one chain before node `before`, each named after `base`, with the
// constants it needs as initializers.
class Chain {
 public:
  Chain(GraphEditor* editor, std::string base, int before) : editor_(editor), base_(std::move(base)), before_(before) {}

  std::string Float(float value) {
    const std::string name = editor_->Fresh(base_ + "_const");
    editor_->AddInitializer(name, onnx::TensorProto::FLOAT, {},
                            std::string(reinterpret_cast<const char*>(&value), sizeof(value)));
    return name;
  }
  std::string Int64s(const std::vector<int64_t>& values) {
    const std::string name = editor_->Fresh(base_ + "_const");
    editor_->AddInitializer(name, onnx::TensorProto::INT64, {static_cast<int64_t>(values.size())},
                            std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(int64_t)));
    return name;
  }
  // A node with one output (`output`, or a fresh name); returns the output's name.
  std::string Node(const std::string& op, const std::vector<std::string>& inputs,
                   const std::vector<std::pair<std::string, int64_t>>& attributes = {}, std::string output = "") {
    if (output.empty()) output = editor_->Fresh(base_ + "_" + op + "_Output");
    onnx::NodeProto node = GraphEditor::MakeNode(op, editor_->Fresh(base_ + "_" + op), inputs, output, attributes);
    editor_->InsertBefore(before_, std::move(node));
    return output;
  }
  // x rounded to FLOAT8E4M3FN (saturating), as float: a QuantizeLinear/DequantizeLinear pair of scale 1.
  std::string RoundToE4M3(const std::string& x) {
    const std::string one = Float(1.0f);
    const std::string q = Node("QuantizeLinear", {x, one}, {{"output_dtype", onnx::TensorProto::FLOAT8E4M3FN}});
    return Node("DequantizeLinear", {q, one});
  }
  void Insert(onnx::NodeProto node) { editor_->InsertBefore(before_, std::move(node)); }
  GraphEditor* editor() { return editor_; }
  const std::string& base() const { return base_; }

 private:
  GraphEditor* editor_;
  std::string base_;
  int before_;
};

// E2M1's nearest value to each element of y (half to even), saturating at +-6: |y| is rounded on
// a grid of step 0.5 below 2, 1 below 4 and 2 up to 6, which are exactly E2M1's values there.
std::string RoundToE2M1(Chain& c, const std::string& y) {
  const std::string a = c.Node("Min", {c.Node("Abs", {y}), c.Float(6.0f)});
  const std::string step = c.Node("Where", {c.Node("Less", {a, c.Float(2.0f)}), c.Float(0.5f),
                                            c.Node("Where", {c.Node("Less", {a, c.Float(4.0f)}), c.Float(1.0f),
                                                             c.Float(2.0f)})});
  const std::string magnitude = c.Node("Mul", {c.Node("Round", {c.Node("Div", {a, step})}), step});
  return c.Node("Mul", {magnitude, c.Node("Sign", {y})});
}

// The smallest power of two >= r (r >= 2^-126): 2^ceil(log2 r) from Log, corrected both ways
// (Log's rounding may land one exponent off at an exact power).
std::string PowerOfTwoAtLeast(Chain& c, const std::string& r) {
  const std::string e = c.Node("Ceil", {c.Node("Div", {c.Node("Log", {r}), c.Float(static_cast<float>(M_LN2))})});
  std::string p = c.Node("Pow", {c.Float(2.0f), e});
  const std::string doubled = c.Node("Mul", {p, c.Float(2.0f)});
  p = c.Node("Where", {c.Node("Less", {p, r}), doubled, p});
  const std::string halved = c.Node("Mul", {p, c.Float(0.5f)});
  return c.Node("Where", {c.Node("GreaterOrEqual", {halved, r}), halved, p});
}

// The ort form of x's fake-quantized copy, written to `output`.
void WriteOrtChain(Chain& c, const QuantFormat& format, const std::string& x, float global, const std::string& output) {
  const int64_t block = format.block_codec->fixed_block_size;
  const std::string shape = c.Node("Shape", {x});
  const std::string blocks = c.Node("Reshape", {x, c.Int64s({-1, block})});
  const std::string amax = c.Node("ReduceMax", {c.Node("Abs", {blocks}), c.Int64s({-1})}, {{"keepdims", 1}});
  std::string values;
  std::string scale;
  if (format.block_codec->element == BlockElement::kE2M1) {
    const std::string code = c.RoundToE4M3(c.Node("Div", {amax, c.Float(kFloat4E2M1Max * global)}));
    scale = c.Node("Mul", {code, c.Float(global)});
    // A block whose scale is 0 holds (next to) nothing: divide by 1 there; it dequantizes to 0.
    const std::string safe = c.Node("Where", {c.Node("Equal", {scale, c.Float(0.0f)}), c.Float(1.0f), scale});
    values = RoundToE2M1(c, c.Node("Div", {blocks, safe}));
  } else {
    const std::string ratio = c.Node("Div", {amax, c.Float(kFloat8E4M3FNMax)});
    const std::string r = c.Node("Max", {ratio, c.Float(kMinPowerOfTwoScale)});
    scale = PowerOfTwoAtLeast(c, r);
    values = c.RoundToE4M3(c.Node("Div", {blocks, scale}));
  }
  c.Node("Reshape", {c.Node("Mul", {values, scale}), shape}, {}, output);
}

// TensorRT's chain: its dynamic quantizer and the dequantization that follows; returns its output.
std::string WriteTrtChain(Chain& c, const QuantFormat& format, const std::string& x, float global) {
  GraphEditor& editor = *c.editor();
  const BlockCodec& codec = *format.block_codec;
  const int64_t block = codec.fixed_block_size;
  const bool fp4 = codec.element == BlockElement::kE2M1;
  const std::string global_name = fp4 ? c.Float(global) : "";
  std::vector<std::string> inputs = {x};
  if (fp4) inputs.push_back(global_name);
  std::vector<std::pair<std::string, int64_t>> attributes = {{"axis", -1}, {"block_size", block}};
  attributes.emplace_back(fp4 ? "scale_type" : "output_dtype", onnx::TensorProto::FLOAT8E4M3FN);
  const std::string values = editor.Fresh(c.base() + "_values");
  const std::string quantize_name = editor.Fresh(c.base() + "_" + codec.trt_dynamic_quantize);
  onnx::NodeProto quantize =
      GraphEditor::MakeNode(codec.trt_dynamic_quantize, quantize_name, inputs, values, attributes);
  quantize.set_domain(kTrtDomain);
  const std::string codes = editor.Fresh(c.base() + "_block_scales");
  quantize.add_output(codes);
  c.Insert(std::move(quantize));
  if (fp4) {
    const std::string scales = c.Node("DequantizeLinear", {codes, global_name});
    return c.Node("DequantizeLinear", {values, scales}, {{"axis", -1}, {"block_size", block}});
  }
  const std::string output = editor.Fresh(c.base() + "_DequantizeLinear_Output");
  onnx::NodeProto dequantize =
      GraphEditor::MakeNode(kTrtMxfp8Dequantize, editor.Fresh(c.base() + "_" + kTrtMxfp8Dequantize), {values, codes},
                            output, {{"axis", -1}, {"block_size", block}, {"output_dtype", onnx::TensorProto::FLOAT}});
  dequantize.set_domain(kTrtDomain);
  c.Insert(std::move(dequantize));
  return output;
}

// The format whose TensorRT dynamic quantizer `node` is, or null.
const QuantFormat* TrtDynamicQuantizeFormat(const onnx::NodeProto& node) {
  if (node.domain() != kTrtDomain) return nullptr;
  for (const QuantFormat* f : AllFormats()) {
    const BlockCodec* codec = f->block_codec;
    if (codec != nullptr && codec->trt_dynamic_quantize != nullptr && node.op_type() == codec->trt_dynamic_quantize) {
      return f;
    }
  }
  return nullptr;
}

// Removes the nodes of `graph` named in `names` (the trt chains' nodes, whose names the writer made
// unique), keeping the others' order.
void RemoveNodes(onnx::GraphProto* graph, const std::set<std::string>& names) {
  auto* nodes = graph->mutable_node();
  int kept = 0;
  for (int i = 0; i < nodes->size(); ++i) {
    if (names.count(nodes->Get(i).name())) continue;
    if (kept != i) nodes->SwapElements(kept, i);
    ++kept;
  }
  nodes->DeleteSubrange(kept, nodes->size() - kept);
}

// One trt-form chain as written by WriteTrtChain: what the ort form needs to replace it.
struct TrtChain {
  const QuantFormat* format = nullptr;
  std::string input;                // the activation quantized
  std::string output;               // the final dequantizer's output, which the consumers read
  float global = 1.0f;              // nvfp4's global scale
  std::string global_name;          // nvfp4: its initializer
  std::vector<std::string> nodes;   // the chain's node names
};

// Finds the trt chain that starts at a node: the dynamic quantizer, (nvfp4) the block scales'
// DequantizeLinear and the values' dequantizer, each the only reader of what it reads.
class TrtChainFinder {
 public:
  explicit TrtChainFinder(const onnx::GraphProto& graph) : graph_(graph) {
    for (int i = 0; i < graph.node_size(); ++i) {
      if (graph.node(i).input_size() > 0) readers_[graph.node(i).input(0)].push_back(i);
    }
    for (const auto& t : graph.initializer()) initializers_[t.name()] = &t;
  }

  std::optional<TrtChain> operator()(int index) const {
    const onnx::NodeProto& n = graph_.node(index);
    TrtChain chain;
    chain.format = TrtDynamicQuantizeFormat(n);
    if (chain.format == nullptr) return std::nullopt;
    const bool fp4 = chain.format->block_codec->element == BlockElement::kE2M1;
    if (n.output_size() != 2 || (fp4 && n.input_size() != 2)) {
      throw Error("internal: TensorRT dynamic quantizer '" + n.name() + "' has an unexpected form");
    }
    chain.input = n.input(0);
    chain.nodes = {n.name(), OnlyReader(n.output(0)).name()};
    chain.output = OnlyReader(n.output(0)).output(0);
    if (fp4) {
      auto it = initializers_.find(n.input(1));
      if (it == initializers_.end()) {
        throw Error("internal: nvfp4 global scale '" + n.input(1) + "' is not an initializer");
      }
      chain.global = TensorToFloats(*it->second).at(0);
      chain.global_name = n.input(1);
      chain.nodes.push_back(OnlyReader(n.output(1)).name());  // the block scales' DequantizeLinear
    }
    return chain;
  }

 private:
  const onnx::NodeProto& OnlyReader(const std::string& tensor) const {
    auto it = readers_.find(tensor);
    if (it == readers_.end() || it->second.size() != 1) {
      throw Error("internal: a TensorRT dynamic quantizer's output '" + tensor + "' is not read by one dequantizer");
    }
    return graph_.node(it->second.front());
  }

  const onnx::GraphProto& graph_;
  std::map<std::string, std::vector<int>> readers_;  // tensor -> nodes reading it as input 0
  std::map<std::string, const onnx::TensorProto*> initializers_;
};

}  // namespace

std::string AddDynamicBlockQdq(GraphEditor* editor, const QuantFormat& format, const std::string& x, float amax,
                               int before, bool trt_form) {
  Chain c(editor, x + "_" + std::string(format.name), before);
  const float global = Nvfp4GlobalScale(amax, false);
  if (trt_form) return WriteTrtChain(c, format, x, global);
  const std::string output = editor->Fresh(x + "_DequantizeLinear_Output");
  WriteOrtChain(c, format, x, global, output);
  return output;
}

bool HasTrtDynamicQuantize(const onnx::GraphProto& graph) {
  for (const auto& n : graph.node()) {
    if (TrtDynamicQuantizeFormat(n) != nullptr) return true;
  }
  return false;
}

void EmulateTrtDynamicQuantize(onnx::ModelProto* model) {
  onnx::GraphProto* graph = model->mutable_graph();
  const TrtChainFinder find(*graph);
  GraphEditor editor(graph);
  std::set<std::string> replaced;  // names of the trt chains' nodes
  std::set<std::string> globals;
  for (int i = 0; i < graph->node_size(); ++i) {
    const std::optional<TrtChain> chain = find(i);
    if (!chain) continue;
    replaced.insert(chain->nodes.begin(), chain->nodes.end());
    if (!chain->global_name.empty()) globals.insert(chain->global_name);
    Chain c(&editor, chain->input + "_" + std::string(chain->format->name), i);
    WriteOrtChain(c, *chain->format, chain->input, chain->global, chain->output);
  }
  if (replaced.empty()) return;
  editor.Splice();
  RemoveNodes(graph, replaced);
  editor.RemoveUnread(globals);
  bool trt_left = false;
  for (const auto& n : graph->node()) trt_left |= n.domain() == kTrtDomain;
  if (trt_left) return;
  auto* imports = model->mutable_opset_import();
  for (int i = 0; i < imports->size(); ++i) {
    if (imports->Get(i).domain() == kTrtDomain) {
      imports->DeleteSubrange(i, 1);
      break;
    }
  }
}

void ImportTrtDomain(onnx::ModelProto* model) {
  for (const auto& op : model->opset_import()) {
    if (op.domain() == kTrtDomain) return;
  }
  auto* op = model->add_opset_import();
  op->set_domain(kTrtDomain);
  op->set_version(1);
}

}  // namespace ptqkit
