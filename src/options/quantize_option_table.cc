// The options of `ptqkit quantize` (and of `ptqkit calibrate` and `ptqkit sensitivity`, which take
// the data and calibration ones; the scan's own are in sensitivity_option_table.cc), one entry each, and every flag of ModelOpt 0.47's
// `python -m modelopt.onnx.quantization`: taken with ModelOpt's meaning, or refused with the
// reason. Entries keep --help order; the README's table is written from them (`ptqkit options
// --format markdown`, checked by tests/python/test_options.py).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <map>

#include "base/log.h"
#include "options/autotune_option_table.h"
#include "options/sensitivity_option_table.h"
#include "options/option_builders.h"
#include "ptqkit/calibration.h"
#include "ptqkit/error.h"
#include "quant/formats/formats.h"
#include "quant/placement/runtime_forms.h"

namespace ptqkit::options {
namespace {

// --quantize_mode's choices: every format row (a new row is a new mode).
std::vector<std::string> FormatRowNames() {
  std::vector<std::string> names;
  for (const QuantFormat* f : AllFormats()) names.emplace_back(f->name);
  return names;
}

constexpr unsigned kBoth = kQuantize | kCalibrate;
// The data, calibration, runtime and logging options the sensitivity scan shares with quantize.
constexpr unsigned kAll = kQuantize | kCalibrate | kSensitivity;

// "in:1x3x224x224,mask:1x128": the text --calibration_shapes / --override_shapes read.
std::string ShapeListText(const std::map<std::string, std::vector<int64_t>>& shapes) {
  std::vector<std::string> entries;
  for (const auto& [name, dims] : shapes) entries.push_back(fmt::format("{}:{}", name, fmt::join(dims, "x")));
  return fmt::format("{}", fmt::join(entries, ","));
}

std::vector<OptionSpec> BuildTable() {
  std::vector<OptionSpec> t;
  // ---- model and output
  t.push_back(Text("onnx_path", &QuantizeOptions::onnx_path, "Input FP32 ONNX model (never modified)")
                  .Metavar("M").Path().Commands(kAll).Required(kQuantize).DefaultDoc("(required)").Details(R"(FP32 model, opset 7–21 (below 13 is upgraded by ONNX's version converter), IR ≥ 3 (raised with the opset); external data is read; models over 2 GiB run without ever serializing their weights. Networks inside `If`/`Loop`/`Scan` subgraphs are quantized like the main graph (a branch the calibration data never takes stays float, with a warning). Never modified.)"));
  t.push_back(Text("output_path", &QuantizeOptions::output_path,
                   "Output model (default: <model>.quant.onnx beside the input)")
                  .Metavar("O").Path().DefaultDoc("`<M's stem>.quant.onnx` beside M").Details(R"(written to a temporary file in O's folder, then renamed)"));
  t.push_back(Text("quantize_mode", &QuantizeOptions::quantize_mode, "int8 | fp8 | int4 | nvfp4 | mxfp8 | mxfp4 (the last four: weight-only MatMul/Gemm)")
                  .Choices(FormatRowNames()).Commands(kBoth).Details(R"(`int8`, `fp8` (E4M3FN, Q/DQ without zero points, opset raised to 21), or weight-only: the constant weight (input B, rank ≥ 2, float32/float16) of every MatMul and Gemm (`transB` respected; `transA=1` left in float) becomes a quantized initializer + blocked `DequantizeLinear` along K; activations stay float (nvfp4 and mxfp8: unless `--quantize_activations`). `int4`: packed INT4 (UINT4 with `--use_zero_point`), a float scale per `--block_size` weights (opset raised to 21, IR ≥ 10). `nvfp4`: packed FLOAT4E2M1 values in blocks of 16, each block's scale an E4M3 code times one float scale per weight (amax / 2688), written as TensorRT's two-level form `DequantizeLinear(values, DequantizeLinear(E4M3 codes, global), block_size 16)` (opset 23, IR 11). `mxfp8`: E4M3 values in blocks of 32 sharing a power-of-two scale stored as FLOAT8E8M0 (opset 24, IR 11). `mxfp4` (OCP MX): packed FLOAT4E2M1 values in blocks of 32 sharing a FLOAT8E8M0 power-of-two scale, the smallest ≥ amax / 6 (opset 24, IR 11). ONNX Runtime's CPU kernels run neither FLOAT4E2M1 nor E8M0: with `--target_runtime ort_cpu` the same numbers are written in FLOAT8E4M3FN values (nvfp4, mxfp4) and float scales (mxfp8, mxfp4) at opset 21, dequantizing to identical weights. The options below that name int4 apply to all four (`--block_size` and `--use_zero_point` to int4 only); node/op-type selectors apply too.)"));
  t.push_back(Text("opset", nullptr, "Opset of the output model (raised further when the mode needs it)")
                  .Metavar("N").Int(7, 3, &QuantizeOptions::opset).PythonNone().Commands(kBoth).DefaultDoc("the model's, raised to the mode's minimum")
                  .Details("The output's default-domain opset: the model is upgraded to it by ONNX's version converter "
                           "before quantization. Below what the mode needs (int8: 13 for per-channel Q/DQ, fp8: 21, "
                           "int4: 21, nvfp4: 23, mxfp8 and mxfp4: 24, all 21 with --target_runtime ort_cpu) it is raised to that, with a warning; below the model's own opset the model's is "
                           "kept, with a warning (as ModelOpt does). A model with GroupNormalization of opsets 18-20 "
                           "goes to 21 in every mode, its per-group scale and bias repeated per channel (the "
                           "opset-18 op is deprecated, and ONNX's converter does not widen them)."));
  t.push_back(Text("override_shapes", nullptr, "Make input shapes static in the output model, e.g. input:1x3x224x224")
                  .Metavar("in:1x3x224x224,...").Commands(kBoth).Apply([](QuantizeSettings& s, const std::string& v) {
                    s.options.override_shapes = ParseShapeList(v);
                  }).Show([](const QuantizeSettings& s) { return ShapeListText(s.options.override_shapes); })
                  .Details("Every dimension of the named graph inputs becomes the given fixed size in the output model "
                           "(and for calibration, unless --calibration_shapes says otherwise); shape inference then "
                           "fixes the shapes it can derive. The number of dimensions must match the input's."));
  t.push_back(Flag("use_external_data_format", &QuantizeOptions::use_external_data_format,
                   "Write weights to <output>.data")
                  .DefaultDoc("off (automatic above 2 GiB)").Details(R"(write weights to `<output>.data`)"));
  t.push_back(Flag("simplify", &QuantizeOptions::simplify,
                   "Fold constant subgraphs and remove dead nodes before quantizing")
                  .Commands(kBoth)  // calibrate must observe the model quantize will plan on
                  .Details("Before placement: nodes whose inputs are all constants (initializers, Constant nodes, "
                           "shapes that shape inference fixes) are evaluated once by ONNX Runtime and replaced by "
                           "initializers, and nodes that no graph output depends on are removed. Outside control-flow "
                           "subgraphs; nodes of other domains and random ops are kept."));

  // ---- calibration data
  t.push_back(Text("canonicalize", nullptr, "Fold BatchNormalization and channel Mul/Add into Conv/Gemm weights first")
                  .Metavar("BOOL").Flagged()
                  .Commands(kBoth)  // calibrate must observe the model quantize will plan on
                  .DefaultDoc("true")
                  .Apply([](QuantizeSettings& s, const std::string& v) {
                    s.options.canonicalize = ParseBoolWord("--canonicalize", v);
                  })
                  .Show([](const QuantizeSettings& s) { return std::string(s.options.canonicalize ? "true" : "false"); })
                  .Details(R"(Before placement and calibration, the graph becomes the one TensorRT and ONNX Runtime run: a BatchNormalization after a Conv, ConvTranspose or Gemm is folded into its weight and bias (after a MatMul of a 2-D input too, which becomes a Gemm), as is a Mul or Add by a per-output-channel or scalar constant (Paddle/TF exports), and HardSigmoid/HardSwish written out as Add/Clip/Div/Mul become the operator (HardSwish from opset 14). Only where exact in real arithmetic: weights that are constants (initializers or Constant nodes, also through Identity/Cast) and not graph inputs, an output read by nothing else; values computed in double and rounded once (**edits weights and biases**). The summary gives the largest output difference against the model as given on calibration samples. Main graph only. `false` leaves the graph as it is)"));
  t.push_back(Text("calibration_data_path", &QuantizeOptions::calibration_data_path,
                   ".npy (single input), .npz (keys = input names) or a folder of them; none = synthetic data")
                  .Metavar("D").Path().Commands(kAll).DefaultDoc("none").Details(R"(see "Calibration data" below; none = seeded synthetic data, with a warning)"));
  t.push_back(Text("calibration_method", &QuantizeOptions::calibration_method, CalibrationMethodHelp())
                  .Choices(calib::AcceptedMethodSpellings())
                  .Commands(kAll).PythonNone().DefaultDoc(CalibrationMethodDefaults())
                  .Apply([](QuantizeSettings& s, const std::string& v) {
                    s.options.calibration_method = calib::CanonicalMethodName(v);
                  })
                  .ModelOptDifference("the int8/fp8 default is mse, not entropy (see the Calibration section); "
                                      "rtn_dq is taken as rtn")
                  .Details(R"(int8/fp8: `max` (absmax), `entropy` (TensorRT-style KL search, 128 levels, over ≥ 2048 histogram bins; exact zeros are left out of the search, and the result is never below the `mse` range of the same histogram: KL alone clipped OCR activations to 3% of their range), `percentile`, `mse` (the amax with the least expected squared quantize-dequantize error over the |x| histogram, rounding inside the range plus clipping outside, on the real grid: int8's 127 uniform steps, or FP8 E4M3's non-uniform values with amax ↦ 448, where a clipped range is kept only if it cuts that error by at least 5%: FP8's error is relative, and smaller gains clipped outliers the task needed; 256 candidate amax up to the absmax). The default is `mse`, not ModelOpt's `entropy`: on real models it stayed within about one point of `max` and was often better, while `entropy` (before its mse floor) wrecked the OCR models. Calibration caches written before `mse`/zero counts (table version 1) are rejected; recalibrate. int4, nvfp4, mxfp8, mxfp4 (weight-only): `rtn` (round to nearest, scale = block amax / the grid's top (7, 6, 448, 6) in the format's scale encoding; reads data only for the loss report, when --calibration_data_path is given), `awq_clip` (per block and output column, the clipping ratio α ∈ {0.5, 0.55, …, 1} with the least output error on the calibration activations; one streaming pass collects each weight input's block Gram matrices XᵀX, so memory does not grow with the number of samples); `awq_lite` (activation-aware scaling: from the same single pass, a_k = mean |x_k| per input channel; for α ∈ {0, 0.05, …, 1} the scales s_k = a_k^α / √(max·min) are tried, the weight stores RTN(diag(s)·W) and the α with the least modelled output error on the block Gram matrices wins, ties to the smaller α, α = 0 being plain RTN; a chosen α > 0 adds a `[K]` initializer 1/s and a `Mul(activation, 1/s)` in front of each consumer; the scaled weight then gets the awq_clip search on the Gram of x·(1/s), so α = 0 is exactly awq_clip). nvfp4, mxfp8 and mxfp4 default to `rtn`: on PP-OCR rec, nvfp4 `awq_clip` raised exact lines in-sample and lost 16 points held out (bench/README). A method of the other modes is an error.)"));
  t.push_back(Real("percentile", &QuantizeOptions::percentile, "Percentile for --calibration_method percentile")
                  .Metavar("P").Commands(kAll).Details(R"(for `percentile`)"));
  t.push_back(Text("calibration_shapes", nullptr, "Calibration shapes, e.g. input:8x3x224x224,mask:8x128")
                  .Metavar("in:8x3x224x224,...").Commands(kAll)
                  .Apply([](QuantizeSettings& s, const std::string& v) { s.options.calibration_shapes = ParseShapeList(v); })
                  .Show([](const QuantizeSettings& s) { return ShapeListText(s.options.calibration_shapes); }).Details(R"(calibration batch shape per input (axis 0 = batch size))"));
  t.push_back(Text("calibration_batch_size", nullptr, "Batch size for models with a dynamic batch dimension (default 1)")
                  .Metavar("N").Int(1, 12, &QuantizeOptions::calibration_batch_size).Commands(kAll).PythonNone()
                  .DefaultDoc("model's fixed batch, else 1").Details(R"(batch size for models with a dynamic batch dimension)"));
  t.push_back(List("calibration_batch_axis", nullptr,
                   "Axis the samples of an input lie along, e.g. state:1 (repeatable or comma list; default: inferred "
                   "when the input has exactly one dynamic dim, else 0; scalars are fed whole)")
                  .Metavar("state:1").Commands(kAll)
                  .ApplyList([](QuantizeSettings& s, const std::vector<std::string>& v) {
                    std::string text;
                    for (const auto& entry : v) text += entry + ",";
                    for (const auto& [input, axis] : ParseBatchAxisList(text)) s.options.calibration_batch_axis[input] = axis;
                  })
                  .DefaultDoc("inferred").Details(R"(the axis an input's samples lie along (repeatable or a comma list); see "Recurrent state" below)"));
  t.push_back(Text("num_synthetic_samples", nullptr, "Samples of synthetic data when none is given")
                  .Metavar("N").Int(1, 18, &QuantizeOptions::num_synthetic_samples).Commands(kBoth)
                  .Details(R"(samples of synthetic data when no data is given)"));
  t.push_back(Text("trust_calibration_data", nullptr, "ModelOpt: allow pickled calibration data")
                  .Flagged().Apply([](QuantizeSettings&, const std::string& v) {
                    if (!ParseBoolWord("--trust_calibration_data", v)) return;
                    log::Warn("--trust_calibration_data: ptqkit never unpickles data; .npy/.npz files holding "
                              "Python objects are refused whatever this flag says");
                  }).Show([](const QuantizeSettings&) { return std::string("false"); }).DefaultDoc("off")
                  .ModelOptDifference("taken, and changes nothing: ptqkit reads numeric arrays only and never "
                                      "unpickles (a warning says so)")
                  .Details("Taken for ModelOpt compatibility: ptqkit reads numeric arrays only and never unpickles, "
                           "so there is nothing to trust; a warning says so."));

  // ---- runtime
  t.push_back(List("calibration_eps", &QuantizeOptions::calibration_eps, "Execution providers in order: cpu, cuda:N, trt")
                  .Metavar("EP").Commands(kAll)
                  .ModelOptDifference("ModelOpt's default is cpu cuda:0 trt; ptqkit's is cpu (its bundled ONNX Runtime "
                                      "is CPU-only)")
                  .Details(R"(execution providers in order; one that this ONNX Runtime build lacks is reported and skipped)"));
  t.push_back(List("trt_plugins", &QuantizeOptions::trt_plugins, "TensorRT plugin libraries (.so) for the trt provider")
                  .Metavar("a.so").Path().Commands(kAll).Details(R"(passed to the TensorRT provider)"));
  t.push_back(Refused("trt_plugins_precision", Kind::kList,
                      "ptqkit cannot run TensorRT plugins (its ONNX Runtime has no TensorRT provider), so it can "
                      "neither calibrate a plugin's int8/fp8 inputs nor check its fp16 form; keep plugins out of the "
                      "plan (--op_types_to_exclude) and set their precision in TensorRT")
                  .Metavar("op:fp16"));
  t.push_back(Text("trt_rtx_backend", nullptr, "ModelOpt: TensorRT-RTX backend for the NvTensorRtRtx provider")
                  .Choices({"legacy", "abi"}).Show([](const QuantizeSettings&) { return std::string("legacy"); })
                  .Apply([](QuantizeSettings&, const std::string& v) {
                    if (v != "legacy") {
                      throw Error("--trt_rtx_backend abi: ptqkit's ONNX Runtime has no TensorRT-RTX provider; "
                                  "calibrate with --calibration_eps cpu (the scales do not depend on the provider)");
                    }
                  })
                  .Details("Only `legacy` (ModelOpt's default) is taken, and it changes nothing: ptqkit's ONNX "
                           "Runtime has no TensorRT-RTX provider."));
  t.push_back(Text("input_shapes_profile", nullptr,
                   "ModelOpt: provider shape profiles, a JSON list (inline or a file) with one object per provider")
                  .Metavar("JSON").Apply([](QuantizeSettings& s, const std::string& v) {
                    s.options.input_shapes_profile = ParseShapesProfile(v);
                  }).Show([](const QuantizeSettings& s) {
                    std::vector<std::string> entries;
                    for (const auto& e : s.options.input_shapes_profile) entries.push_back(nlohmann::json(e).dump());
                    return fmt::format("{}", fmt::join(entries, " "));
                  })
                  .Details("One JSON object of string options per --calibration_eps entry, in order (ModelOpt's "
                           "form). The `trt` entry is passed to ONNX Runtime's TensorRT provider as its options "
                           "(`trt_profile_min_shapes`, `trt_profile_opt_shapes`, `trt_profile_max_shapes`, ...); the "
                           "other providers take none, so their objects must be empty. ModelOpt's TensorRT-RTX keys "
                           "(`nv_profile_*`) have no provider here.")
                  .ModelOptDifference("only the trt entry may hold options (ptqkit has no TensorRT-RTX provider)"));
  t.push_back(Text("intra_op_num_threads", nullptr, "ONNX Runtime threads (0 = its default)")
                  .Metavar("N").Int32(0, 6, &QuantizeOptions::intra_op_num_threads).Commands(kAll).PythonNone()
                  .DefaultDoc("ONNX Runtime's default").Details(R"(results do not depend on it)"));
  t.push_back(Refused("calibrate_per_node", Kind::kFlag,
                      "ptqkit's calibration already keeps memory bounded: ONNX Runtime runs one batch at a time and "
                      "only the planned activations are read out and reduced to statistics before the next batch; "
                      "lower --calibration_batch_size (down to 1) to lower the peak further")
                  .Commands(kBoth));

  // ---- what gets quantized
  t.push_back(List("op_types_to_quantize", &QuantizeOptions::op_types_to_quantize,
                   "Quantize only these op types (bypasses the rules)")
                  .Metavar("T").Commands(kBoth).Details(R"(quantize only these op types (bypasses the placement rules))"));
  t.push_back(List("op_types_to_exclude", &QuantizeOptions::op_types_to_exclude, "Keep these op types in float")
                  .Metavar("T").Commands(kBoth).Details(R"(keep these op types in float)"));
  t.push_back(List("nodes_to_quantize", &QuantizeOptions::nodes_to_quantize,
                   "Quantize only these nodes: exact names, or regexes matched from the start of the name")
                  .Metavar("N").Commands(kBoth).Details(R"(quantize only these nodes)"));
  t.push_back(List("nodes_to_exclude", &QuantizeOptions::nodes_to_exclude,
                   "Keep these nodes in float: exact names, or regexes matched from the start of the name")
                  .Metavar("N").Commands(kBoth).Details(R"(keep these nodes in float)"));
  // Long lists never need the command line: one name a line, taken literally.
  t.push_back(ListFile("nodes_to_exclude", &QuantizeOptions::nodes_to_exclude));
  t.push_back(ListFile("nodes_to_quantize", &QuantizeOptions::nodes_to_quantize));
  t.push_back(ListFile("op_types_to_exclude", &QuantizeOptions::op_types_to_exclude));
  t.push_back(ListFile("op_types_to_quantize", &QuantizeOptions::op_types_to_quantize));
  t.push_back(Flag("disable_mha_qdq", &QuantizeOptions::disable_mha_qdq,
                   "No Q/DQ on the MatMuls of attention (Q.K^T and attention.V)")
                  .ModelOptDifference("ptqkit's placement rules already keep the attention core in float in every "
                                      "mode; ModelOpt quantizes it unless this flag is given")
                  .Details("The attention core (MatMul → [Div/Mul] → [Add] → Softmax → MatMul) stays in float. "
                           "ptqkit's placement does this already (see the placement rules), so the flag confirms "
                           "it; with --op_types_to_quantize or --nodes_to_quantize, which bypass the rules, it "
                           "still keeps those MatMuls in float."));
  t.push_back(List("passes", &QuantizeOptions::passes, "Graph passes around quantization: concat_elimination")
                  .Choices({"concat_elimination"})
                  .Details("`concat_elimination` (ModelOpt's only pass and its default): Concat inputs share one "
                           "scale so TensorRT can drop the Concat. ptqkit's placement always does this."));
  t.push_back(Flag("dq_only", &QuantizeOptions::dq_only, "Store weights as INT8 initializers with DequantizeLinear only")
                  .Details(R"(store weights as INT8/FP8 initializers + DequantizeLinear (default: FP32 weights + Q→DQ))"));
  t.push_back(Text("target_runtime", &QuantizeOptions::target_runtime,
                   "trt | ort_cpu | ort_cpu_dynamic | openvino: the runtime the output is for (int8: the Q/DQ form its kernels fuse; nvfp4/mxfp8/"
                   "mxfp4: ort_cpu writes containers ONNX Runtime's CPU kernels run)")
                  .Choices(RuntimeFormNames()).Commands(kBoth).Details(R"(`trt` (default), `ort_cpu`, `ort_cpu_dynamic` or `openvino`. int8: `trt` writes TensorRT's explicit quantization (Q/DQ on the inputs of Conv, MatMul, Gemm and the ops the placement rules name, INT8 activations), which OpenVINO reads the same way; `openvino` is that form with a Conv's input Q/DQ placed above the layout op (Transpose, Reshape, ...) it reads through, where OpenVINO keeps strided Convs in i8 (TF-converted ResNet-50: 52 of 54 Convs in i8 against 46). `ort_cpu` writes what ONNX Runtime's CPU kernels fuse (its QDQ selectors): Q/DQ also on the outputs of quantized ops (after a Relu or Clip(0, x) that the Q makes redundant) and around the ops between them that have integer kernels (Add, Mul, pooling, Concat; MaxPool, Reshape, Transpose, Resize share their input's scale), UINT8 activations (zero point 0 and 255 steps where the tensor is never negative, else zero point 128 on the symmetric grid: ONNX Runtime fuses no int8 activation on x86), INT8 weights stored as integers (as `--dq_only`); embedding tables (a Gather of a constant table of at least 65536 values) are stored as INT8 rows with one scale per row; a Conv whose output only an activation without an integer kernel reads (HardSwish) stays float, and a MatMul of two run-time inputs (attention's Q·K^T) too. `ort_cpu_dynamic` is the same, except that a MatMul whose output stays float quantizes its input at run time (DynamicQuantizeLinear + MatMulInteger, which ONNX Runtime fuses with the bias Add after it, as quantize_dynamic's output) and smoothing leaves an exported GELU's constant alone (ONNX Runtime fuses it only as written): faster on transformer encoders (all-MiniLM-L6 2.26x FP32 against 2.1x), but each sample's output then depends on the rest of its batch (the range is the batch's). The loss report then runs at ONNX Runtime's default level, as users do; the summary lists the quantized ops that have no integer kernel there. Measured speed per model: bench/README.md "Speed". fp8 and int4 write the same file for both: FP8 Q/DQ carry no zero point (the QuantizeLinear names FLOAT8E4M3FN in `output_dtype`), the form ONNX Runtime's default-level rewrites leave alone and TensorRT's parser reads as the same explicit quantization; see "Outputs for ONNX Runtime on CPU". nvfp4, mxfp8 and mxfp4: `trt` writes the standard types (FLOAT4E2M1 values, FLOAT8E8M0 scales) that ONNX Runtime 1.32's CPU kernels do not run; `ort_cpu` writes the same numbers as FLOAT8E4M3FN values and float scales at opset 21, whose dequantized weights are bit-identical)"));
  t.push_back(Flag("reduce_range", &QuantizeOptions::reduce_range,
                   "int8: 7-bit weights, for ONNX Runtime on x86 CPUs without VNNI (no u8s8 saturation)")
                  .Details(R"(int8: 7-bit weights, for ONNX Runtime on x86 CPUs without VNNI)"));

  // ---- weight edits of the int8/fp8 pipeline (on by default; each can be turned off)
  t.push_back(Text("bias_correction", nullptr, "int8/fp8: correct Conv biases for the mean shift weight rounding causes")
                  .Metavar("BOOL").Flagged()
                  .Apply([](QuantizeSettings& s, const std::string& v) {
                    s.options.bias_correction = ParseBoolWord("--bias_correction", v);
                  })
                  .Show([](const QuantizeSettings& s) { return std::string(s.options.bias_correction ? "true" : "false"); })
                  .Details(R"(int8/fp8: subtract from each quantized Conv's bias the shift of its output mean caused by rounding its weights (input-channel means measured on the calibration data; **edits bias values**, adds a bias to a Conv that has none; skipped with `--save_calibration_cache`/`--calibration_cache`). `false` leaves biases as they are)"));
  t.push_back(Text("depthwise_equalization", nullptr, "int8/fp8: even out the channel ranges of depthwise Conv inputs")
                  .Metavar("BOOL").Flagged()
                  .Apply([](QuantizeSettings& s, const std::string& v) {
                    s.options.depthwise_equalization = ParseBoolWord("--depthwise_equalization", v);
                  })
                  .Show([](const QuantizeSettings& s) { return std::string(s.options.depthwise_equalization ? "true" : "false"); })
                  .Details(R"(int8/fp8: a depthwise Conv reads each input channel alone, so its input may be scaled per channel if its weights are scaled back: each quantized depthwise Conv whose input does not come out of a capped activation (ReLU6/Clip, Sigmoid, HardSigmoid: there any channel can reach the cap on inputs the calibration did not show, and an amplified channel would clip; measured on EfficientNet-Lite0) gets a `Mul` by `g_c = A / max(amax_c, A/64)` on its input edge before the Q/DQ (A: the largest channel maximum) and weights divided by `g_c` (channel maxima from one more forward pass; **edits weights**; where the input is Conv -> [Relu] -> [zero Pad] the gain goes into that Conv's output channels, after other activations such as HardSwish it is a **Mul added** on the edge; float outputs unchanged). After a BatchNormalization fold such channels span 0.1 to 70 (PP-PicoDet): one per-tensor INT8 scale erases the small ones (layout detector INT8 box recall 0.48 -> 0.95). Skipped with `--save_calibration_cache`/`--calibration_cache`. `false` turns it off)"));
  t.push_back(Text("weight_rounding", &QuantizeOptions::weight_rounding,
                   "int8/fp8: nearest | gptq (codes chosen to minimise each layer's output error)")
                  .Choices({"nearest", "gptq"})
                  .Details(R"(int8/fp8: `nearest` rounds every weight to the nearest grid value, as a Q/DQ runtime does with float weights. `gptq` (GPTQ, Frantar et al. 2022) chooses each quantized Conv/MatMul/Gemm weight's codes, on the same per-channel scales, to minimise its layer's output error on the calibration samples: one more forward pass collects the Gram matrix XᵀX of each weight's input (Conv: of its receptive fields, padding included; memory independent of the sample count, passes split at 1 GiB of Gram matrices), then input columns are rounded in order of decreasing activation energy and each rounding error is pushed onto the columns not yet rounded. A weight keeps round-to-nearest when that models a smaller error. The output is standard Q/DQ: the weight initializers hold values the rewrite quantizes back to the chosen codes (**edits weights**; with bias correction on, Conv biases also absorb the mean shift, so a Conv's rounding minimises the error around its input's mean: XᵀX centred). Cost: rows·K² per weight plus K³ per distinct input; the summary gives the time and the modelled error against round-to-nearest. AIMET's AdaRound learns the same codes by gradient descent, which a CPU cannot afford per layer; `gptq` needs no learning rate, iterations or seed)"));
  t.push_back(Real("smoothquant_alpha", &QuantizeOptions::smoothquant_alpha,
                   "int8: SmoothQuant migration strength for the inputs of quantized MatMuls (0 = off)")
                  .Metavar("A").Details(R"(int8: SmoothQuant-style migration of activation outliers into the weights of the quantized MatMuls with a constant weight: channel j of their input is divided by `amax_j^A / wmax_j^(1-A)` and row j of the weights multiplied by it (**edits weights**; float outputs unchanged). The division is folded into the constant of a Mul producing the input when only such MatMuls read it (an exported GELU's `* 0.5`, a pre-LN `* gamma`; not a GELU ONNX Runtime or OpenVINO fuse, for `ort_cpu*`/`openvino`); elsewhere a per-channel Mul is inserted ahead of the MatMuls, only where the input has outlier channels (largest channel range >= 4x the median one). `0` = off; skipped with `--save_calibration_cache`/`--calibration_cache`)"));

  // ---- int4
  t.push_back(Text("block_size", nullptr, "int4: weights per scale along K (-1: one block per output channel)")
                  .Metavar("N").KindIs(Kind::kInt).Apply([](QuantizeSettings& s, const std::string& v) {
                    s.options.block_size = v == "-1" ? -1 : ParseCount("--block_size", v, 0, 9);  // 0: the int4 check says why
                  }).Show([](const QuantizeSettings& s) { return fmt::format("{}", s.options.block_size); })
                  .Details(R"(int4: weights per scale along K (the last block may be shorter; scale shape `[ceil(K/N), N_out]` for MatMul, `[N_out, ceil(K/N)]` for Gemm `transB=1`); `-1` = one block spanning K (per output channel))"));
  t.push_back(Text("mixed_precision", &QuantizeOptions::mixed_precision,
                   "int4: int4,int8 stores some weights as INT8 (--int8_nodes, and the fewest more that meet "
                   "--accuracy_budget); int8/fp8: int8,fp8 quantizes each node in the format it loses less in")
                  .Choices({"int4,int8", "int8,fp8", "fp8,int8"}).Details(R"(int8/fp8 (`--target_runtime trt`): `int8,fp8` quantizes each Conv/MatMul/Gemm node's input activations and weight in INT8 or FP8 E4M3, whichever its node sensitivity scan (`--accuracy_budget_metric`, on the run's calibration data) scores lower, INT8 on a tie: the two move the same bytes at the same tensor-core rate on the GPUs that have both, and TensorRT builds one engine from both kinds of Q/DQ (opset 19+). With `--accuracy_budget X`, the fewest nodes are then kept in FP16/FP32 over the ranking of each node's chosen score. A tensor read by nodes of both formats takes FP8. The summary and `--report_json` (`node_formats`) give each node's format and both scores. Two scans: about twice a budget run's time. int4: `int4,int8` stores some MatMul/Gemm weights as INT8 (symmetric, one scale per output channel: a per-axis `DequantizeLinear`) and the rest as INT4: first those of `--int8_nodes`; then, with `--accuracy_budget X`, the fewest more such that the divergence from FP32 on the held-out samples is ≤ X. The ranking is measured, not a rule: with every other weight in INT4, each weight is given its INT8 copy alone and ranked by how much of the divergence that recovers (one evaluation per weight on the held-out samples, each quantized weight computed once); the cut is then bisected like the float budget. The summary and `--report_json` (`weight_precision`) give each node's format. Each evaluation builds a copy of the model: meant for models that fit twice in memory)"));
  t.push_back(List("int8_nodes", &QuantizeOptions::int8_nodes,
                   "int4: MatMul/Gemm nodes whose weights are INT8 instead of INT4 (implies --mixed_precision int4,int8)")
                  .Metavar("N").Details(R"(int4: MatMul/Gemm nodes (exact names, or regexes matched from the start of the name, as `--nodes_to_exclude`) whose weights are stored INT8 per output channel instead of INT4; implies `--mixed_precision int4,int8`)"));
  t.push_back(Text("use_zero_point", nullptr, "int4: asymmetric UINT4 weights with zero points")
                  .Flagged().Apply([](QuantizeSettings& s, const std::string& v) {
                    s.options.use_zero_point = ParseBoolWord("--use_zero_point", v);
                  }).Show([](const QuantizeSettings& s) { return std::string(s.options.use_zero_point ? "true" : "false"); })
                  .DefaultDoc("off")
                  .ModelOptDifference("ModelOpt reads `--use_zero_point False` as true (Python's bool of a non-empty "
                                      "string); ptqkit reads it as false")
                  .Details(R"(int4: asymmetric UINT4 weights with UINT4 zero points (block range widened to include 0) instead of symmetric INT4 in [-8, 7]) `--use_zero_point True`/`False` (ModelOpt's spelling) are taken too.)"));
  t.push_back(Text("quantize_activations", nullptr,
                   "nvfp4, mxfp8: also quantize each quantized MatMul/Gemm's input A, block scales computed at "
                   "run time")
                  .Flagged().Apply([](QuantizeSettings& s, const std::string& v) {
                    s.options.quantize_activations = ParseBoolWord("--quantize_activations", v);
                  }).Show([](const QuantizeSettings& s) {
                    return std::string(s.options.quantize_activations ? "true" : "false");
                  })
                  .DefaultDoc("off (weight-only)")
                  .Details(R"(nvfp4 and mxfp8: input A of every MatMul/Gemm whose weight is quantized is quantized too, in the format's blocks along K (16 for nvfp4, 32 for mxfp8), each block's scale computed at run time from its own absolute maximum as TensorRT's DynamicQuantize does (nvfp4: an E4M3 code times one global scale per tensor, amax / 2688 from calibration; mxfp8: a power of two). With `--target_runtime trt` the file holds TensorRT's `trt::TRT_FP4DynamicQuantize` / `trt::TRT_MXFP8DynamicQuantize` ops, which ONNX Runtime cannot run (the loss report runs the standard-operator twin); with `ort_cpu`, standard operators (Reshape, ReduceMax, QuantizeLinear/DequantizeLinear, Round) computing the same values. Float32 activations whose K is a multiple of the block only; the others stay float.)"));
  t.push_back(Real("awqclip_alpha_step", &QuantizeOptions::awqclip_alpha_step,
                   "int4 awq_clip: step of the clipping-ratio search")
                  .Metavar("S").Details("int4 `awq_clip`: the clipping ratios tried are 1 − S·k down to --awqclip_alpha_min"));
  t.push_back(Real("awqclip_alpha_min", &QuantizeOptions::awqclip_alpha_min, "int4 awq_clip: smallest clipping ratio tried")
                  .Metavar("A"));

  // ---- precision of everything else
  t.push_back(Text("high_precision_dtype", &QuantizeOptions::high_precision_dtype,
                   "fp32 | fp16 | bf16: type of everything not quantized (graph I/O keep their type via Casts)")
                  .Choices({"fp32", "fp16", "bf16"})
                  .ModelOptDifference("ModelOpt's default is fp16; ptqkit's is fp32, so the quantized model is "
                                      "compared with the same FP32 model the user gave")
                  .Details(R"(`fp16` or `bf16`: after Q/DQ insertion, everything not quantized (weights, biases, Q/DQ scales, Constants, activations) is converted; opset raised to 19. Graph inputs/outputs keep float32 through Casts. Stays float32: Resize `scales`, ops without a definition in that type (bf16: Conv, pooling, …; list in `src/quant/fp16_conversion.cc`), other domains, and a Q/DQ whose scale would be subnormal in that type (warning). ONNX Runtime's CPU provider runs the fp16 models; it has no bf16 kernels.)"));
  t.push_back(List("op_types_to_exclude_fp16", &QuantizeOptions::op_types_to_exclude_fp16,
                   "With fp16/bf16: keep these op types in float32 (Casts around them)")
                  .Metavar("T").Details(R"(with fp16/bf16: keep these op types in float32, with Casts around them)"));
  t.push_back(Flag("direct_io_types", &QuantizeOptions::direct_io_types,
                   "With fp16/bf16: change the graph inputs/outputs to that type instead of adding Casts")
                  .Details(R"(with fp16/bf16: change the graph inputs/outputs to that type instead of adding boundary Casts) With fp32 (nothing converted) the flag is an error, not ignored.)"));
  t.push_back(Text("mha_accumulation_dtype", nullptr, "ModelOpt: accumulation type of attention in fp8 (fp16 | fp32)")
                  .Choices({"fp16", "fp32"}).Show([](const QuantizeSettings&) { return std::string("fp16"); })
                  .Apply([](QuantizeSettings&, const std::string& v) {
                    if (v == "fp32") {
                      throw Error("--mha_accumulation_dtype fp32: ptqkit keeps the attention core (Q.K^T, Softmax, "
                                  "attention.V) in float already, so there is no FP8 attention to accumulate in fp32; "
                                  "leave the flag out (or use fp16, ModelOpt's default)");
                    }
                  })
                  .Details("`fp16` (ModelOpt's default) is taken and changes nothing. `fp32` is refused: it asks for "
                           "FP8 attention MatMuls accumulated in fp32, and ptqkit never quantizes the attention core."));

  // ---- loss report, budget, reports
  t.push_back(Text("eval_samples", nullptr,
                   "Loss report: hold out N calibration samples spread through the file (at most a quarter) and "
                   "compare the quantized model with FP32 on them (0 = no report)")
                  .Metavar("N").Int(0, 9, &QuantizeOptions::eval_samples).Commands(kBoth).Details(R"(the loss report: N calibration samples (at most a quarter of them; none held out below 4 samples, then the report is in-sample), spread evenly through the file, are held out of calibration, split by sample so the batch size changes nothing; the report lists them (`sample_indices`); 0 = no report. See "What quantization cost")"));
  t.push_back(Text("eval_mask_input", &QuantizeOptions::eval_mask_input,
                   "Loss report, budget and sensitivity scores: leave out the positions where this [batch, "
                   "sequence] input is 0 (e.g. attention_mask); `none`: every position counts")
                  .Metavar("NAME").PythonNone().Commands(kQuantize | kSensitivity)
                  .DefaultDoc("the model's input `attention_mask` when it has one ([batch, sequence], integer or bool), "
                              "else none")
                  .Details("an input marking padding with 0, shaped [batch, sequence] (a token model's "
                           "`attention_mask`): the loss report, the accuracy budget and `ptqkit sensitivity`'s "
                           "probes compare outputs shaped "
                           "[batch, sequence, ...] only at the positions where it is not 0, as a task metric over "
                           "real tokens does; without it padded positions weigh as much as real ones, and their "
                           "noise can make a good model look lost. Any other output is compared whole. A model "
                           "input named `attention_mask` is used unless this names another or `none`."));
  t.push_back(Real("accuracy_budget", &QuantizeOptions::accuracy_budget,
                   "Keep in float the fewest nodes (ranked by a node sensitivity scan) such that the divergence from "
                   "FP32 on the held-out samples is at most this (see --accuracy_budget_metric); with "
                   "--mixed_precision int4,int8: the fewest INT8 weights")
                  .Metavar("X").PythonNone().DefaultDoc("off").Details(R"(keep in float the fewest nodes, in the order of a node sensitivity scan, such that the divergence from FP32 on the held-out samples is ≤ X; see "Accuracy budget")"));
  t.push_back(Text("accuracy_budget_metric", &QuantizeOptions::accuracy_budget_metric,
                   "cos | kl_div | mse (summed over outputs of the per-sample mean) | top1 (largest top-1 "
                   "disagreement, 0..1)")
                  .Choices({"cos", "kl_div", "mse", "top1"}).Details(R"(`cos`, `kl_div`, `mse` (per-sample mean, summed over outputs, as the scan scores) or `top1` (largest top-1 disagreement over outputs, 0..1))"));
  t.push_back(Text("report_json", &QuantizeOptions::report_json, "Write the run's report (loss included) as JSON here")
                  .Metavar("F").Path().Details(R"(write the run's report (counts, left in float, loss, accuracy budget) as JSON)"));
  t.push_back(Text("report_html", &QuantizeOptions::report_html,
                   "Write the run's report as one HTML page (loss table, culprits, accuracy-budget curve)")
                  .Metavar("F").Path().Details(R"(the same as one self-contained HTML page, with the accuracy-budget curve as a chart)"));

  // ---- calibration caches
  t.push_back(Text("save_calibration_cache", &QuantizeOptions::save_calibration_cache,
                   "Write the calibration table (JSON) here")
                  .Metavar("F").Path().Details(R"(write the calibration table (JSON: tensor → amax and exact histogram))"));
  t.push_back(Text("calibration_cache", &QuantizeOptions::calibration_cache,
                   "Read the calibration table (JSON) instead of calibrating")
                  .Metavar("F").Path().Commands(kQuantize | kSensitivity).Details(R"(read that table instead of calibrating (sensitivity: a table of `calibrate --for_sensitivity`))"));
  t.push_back(Text("calibration_cache_path", &QuantizeOptions::calibration_cache_path,
                   "Read activation scales from a TensorRT calibration cache (text)")
                  .Metavar("F").Path()
                  .Details("TensorRT's text calibration cache (first line `TRT-<version>-<calibrator>`, then "
                           "`tensor: <big-endian float32 scale in hex>`), as ModelOpt reads it: a planned activation "
                           "named in the cache gets amax = scale·127 (int8) or scale·448 (fp8). When the cache names "
                           "every planned activation nothing is calibrated; otherwise the rest is calibrated as usual "
                           "and a warning counts them."));
  t.push_back(Text("save_calibration_cache_path", &QuantizeOptions::save_calibration_cache_path,
                   "Write the activation scales as a TensorRT calibration cache (text)")
                  .Metavar("F").Path()
                  .Details("The run's final activation scales (amax/127, int8 only) in TensorRT's text calibration "
                           "cache form, readable by --calibration_cache_path and by TensorRT's implicit-quantization "
                           "calibrators."));

  // ---- logging (front-end settings)
  t.push_back(Text("log_level", nullptr, "DEBUG | INFO | WARNING | ERROR (any case)")
                  .Commands(kAll)
                  .Apply([](QuantizeSettings& s, const std::string& v) {
                    log::ParseLevel(v);  // names a bad level now, before anything runs
                    s.log_level = v;
                  })
                  .Show([](const QuantizeSettings& s) { return s.log_level; }));
  t.push_back(Text("log_file", nullptr, "Also write log messages to this file")
                  .Metavar("F").Path().Commands(kAll)
                  .Apply([](QuantizeSettings& s, const std::string& v) { s.log_file = v; })
                  .Show([](const QuantizeSettings& s) { return s.log_file; }));
  t.push_back(Flag("keep_intermediate_files", nullptr, "ModelOpt: keep intermediate files (ptqkit writes none)")
                  .Apply([](QuantizeSettings&, const std::string& v) {
                    if (!ParseBoolWord("--keep_intermediate_files", v)) return;
                    log::Info("--keep_intermediate_files: ptqkit writes no intermediate files; only the output model "
                              "(and the reports you ask for) are written");
                  })
                  .ModelOptDifference("taken, and changes nothing: ptqkit writes no intermediate files")
                  .Details("Taken; ptqkit writes no intermediate files (everything happens in memory), so there is "
                           "nothing more to keep. A log line says so."));

  // ---- ModelOpt flags ptqkit does not take
  t.push_back(Refused("model_id", Kind::kText,
                      "ptqkit reads no Hugging Face configs (it makes no network requests); give the shapes with "
                      "--calibration_shapes or --input_shapes_profile"));
  t.push_back(Refused("trust_remote_code", Kind::kFlag,
                      "ptqkit runs no model code from Hugging Face (see --model_id)"));
  t.push_back(Refused("target_dla", Kind::kFlag,
                      "ptqkit does not target DLA: DLA wants Q/DQ on every tensor, which costs accuracy on GPU "
                      "engines; use --op_types_to_quantize with the op types your DLA build runs"));
  // Autotune: --autotune [quick|default|extensive] and the --autotune_* flags (autotune_option_table.cc).
  AddAutotuneOptions(t);
  AddSensitivityOptions(t);
  return t;
}

}  // namespace

const std::vector<OptionSpec>& QuantizeOptionTable() {
  static const std::vector<OptionSpec> table = BuildTable();
  return table;
}

}  // namespace ptqkit::options
