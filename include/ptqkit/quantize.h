// Quantize(): the whole post-training quantization of one ONNX model — load, validate data,
// plan Q/DQ placement, calibrate with one streaming pass of ONNX Runtime, insert Q/DQ, save.
// Option names and defaults follow ModelOpt's `modelopt.onnx.quantization.quantize`.
//
// The input model and data files are only read. The output is written atomically (temporary file
// in the output folder, then rename), so on any error nothing is left behind.
// Not re-entrant with respect to logging settings; otherwise independent calls may run in parallel.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ptqkit/autotune.h"
#include "ptqkit/run_options.h"
#include "ptqkit/tensor.h"

namespace ptqkit {

// The model, data, calibration and runtime fields (onnx_path, calibration_data_path, ...,
// calibration_cache) are SharedRunOptions' (ptqkit/run_options.h): the sensitivity scan takes them too.
struct QuantizeOptions : SharedRunOptions {
  std::string output_path;  // default: <input folder>/<stem>.quant.onnx
  std::string quantize_mode = "int8";

  // Calibration data: a path (.npy / .npz / folder), or tensors in memory (name -> samples on
  // axis 0; "" binds to the only input). Neither: seeded synthetic data, with a warning.
  std::optional<std::map<std::string, HostTensor>> calibration_tensors;
  int64_t num_synthetic_samples = 32;

  // int8/fp8: max | entropy | percentile | mse (activation ranges); int4: rtn | awq_clip | awq_lite
  // (weight clipping; awq_lite: activation-aware input-channel scaling, 1/s applied by a Mul on
  // the activation). "" = the mode's default, mse for int8/fp8 (ModelOpt: entropy), awq_clip for int4.
  std::string calibration_method;

  std::vector<std::string> op_types_to_quantize;
  std::vector<std::string> op_types_to_exclude;
  std::vector<std::string> nodes_to_quantize;
  std::vector<std::string> nodes_to_exclude;

  bool dq_only = false;

  // The runtime the output is for. "trt" (default): TensorRT's explicit-quantization patterns.
  // "ort_cpu": today the same file as "trt" (kept for scripts of earlier versions, which moved
  // Relu/Clip after FP8 DQs for ONNX Runtime): FP8 Q/DQ without zero points is a form both
  // runtimes compute as written (quant/formats/formats.h zero_point_free).
  std::string target_runtime = "trt";
  // int8: 7-bit weights (scale = amax/63), for ONNX Runtime's u8s8 kernels on x86 CPUs without
  // VNNI, whose 16-bit pair sums saturate with full-range weights (its quantizer's reduce_range).
  bool reduce_range = false;
  // int8/fp8: subtract from each quantized Conv's bias the shift of its output mean that rounding
  // its weights causes (measured input-channel means; quant/corrections/bias_correction.h). Edits bias values.
  bool bias_correction = true;
  // int8: SmoothQuant-style migration for MatMuls whose input comes from a Mul by a constant (the
  // end of an exported GELU, a LayerNorm's gamma): input channel j is divided by
  // s_j = amax_j^alpha / wmax_j^(1 - alpha), the MatMul weights' row j multiplied by it, folded into
  // that constant (quant/corrections/activation_smoothing.h). Edits weights. 0 turns it off.
  double smoothquant_alpha = 0.7;
  // int8/fp8: the input of each quantized depthwise Conv is multiplied per channel by a gain that
  // brings every channel to the range of the largest (a Mul before its Q/DQ), and the Conv's weights
  // divided by it (quant/corrections/depthwise_equalization.h). Edits weights, adds a Mul per such Conv.
  bool depthwise_equalization = true;
  // int8/fp8 weight rounding: "nearest" (round to nearest, as every Q/DQ runtime does) or "gptq":
  // each quantized weight's codes chosen to minimise its layer's output error on the calibration
  // inputs (quant/corrections/hessian_rounding.h), on the same scales. Edits weights (and Conv biases).
  std::string weight_rounding = "nearest";

  // int4 only: blocks of block_size weights along K share a scale (-1: one block per output
  // channel); use_zero_point stores UINT4 with zero points instead of symmetric INT4; the
  // awq_clip search tries alpha = 1 - s * awqclip_alpha_step down to awqclip_alpha_min.
  int64_t block_size = 128;
  // int4: "int4,int8" stores some MatMul/Gemm weights as INT8 (per output channel) instead:
  // those of int8_nodes (selectors, as nodes_to_exclude), then, with accuracy_budget, the fewest
  // more that bring the divergence within it (ranked by what each one's INT8 copy recovers).
  // int8_nodes alone implies it.
  // int8/fp8: "int8,fp8" quantizes each node in the format of the two whose node sensitivity scan
  // scores it lower (pipeline/format_choice.h); accuracy_budget then keeps the fewest in float.
  std::string mixed_precision;
  std::vector<std::string> int8_nodes;
  bool use_zero_point = false;
  // nvfp4, mxfp8: input A of every quantized MatMul/Gemm is quantized too, in the format's blocks
  // along K with scales computed at run time (TensorRT's DynamicQuantize; nvfp4's per-tensor
  // global scale from calibration). Written as TensorRT's ops (target_runtime trt) or as standard
  // operators computing the same values (ort_cpu).
  bool quantize_activations = false;
  double awqclip_alpha_step = 0.05;
  double awqclip_alpha_min = 0.5;
  std::string high_precision_dtype = "fp32";  // fp32 | fp16 | bf16 (everything not quantized)
  std::vector<std::string> op_types_to_exclude_fp16;  // fp16/bf16: op types kept in float32
  bool direct_io_types = false;  // fp16/bf16: graph inputs/outputs change type (no boundary Casts)
  bool use_external_data_format = false;

  // The loss report: `eval_samples` samples spread evenly through the calibration data (at most a
  // quarter of it) are held out of the calibration and both models run on them; 0 = no report.
  int64_t eval_samples = 16;
  // An input that marks padding with 0, [batch, sequence] (a token model's attention_mask): the
  // loss report and the accuracy budget leave out the positions of every output shaped
  // [batch, sequence, ...] where it is 0, as a task metric over real tokens does. "": the model's
  // input `attention_mask` when it has one (integer or bool, rank 2), else none
  // (accuracy/padding_mask_input.h); "none": every position counts (padded positions then weigh as
  // much as real ones).
  std::string eval_mask_input;
  std::string report_json;  // write the run's report (loss included) as JSON here
  std::string report_html;  // ... and as a self-contained HTML page (loss table, budget curve)
  // Accuracy budget (int8/fp8, needs held-out samples): when >= 0, keep in float the fewest
  // nodes, in the order of a node sensitivity scan, such that the divergence from FP32 on the
  // held-out samples is at most this (see pipeline/accuracy_budget.h). Metric: kl_div | mse | cos
  // (summed over outputs of the per-sample mean, like the scan) | top1 (largest top-1
  // disagreement over outputs, 0..1).
  double accuracy_budget = -1.0;
  std::string accuracy_budget_metric = "cos";
  // With accuracy_budget: scores a model file on the caller's own test set (higher is better;
  // Python's accuracy_eval). The budget is then the largest allowed drop from the FP32 model's
  // score, and every candidate of the search is written to a temporary file and scored by it.
  std::function<double(const std::string& model_path)> accuracy_eval;

  std::string save_calibration_cache;  // write the CalibrationTable JSON here
  // TensorRT's text calibration cache ("TRT-<version>-<calibrator>", then "tensor: <hex scale>"):
  // read activation scales from it (ModelOpt's calibration_cache_path) / write the run's to it.
  std::string calibration_cache_path;
  std::string save_calibration_cache_path;

  // The model before placement. opset: the output's default-domain opset (0: the model's, raised
  // to the mode's minimum). override_shapes: graph inputs made static. simplify: constant subgraphs
  // folded and dead nodes removed first. canonicalize: BatchNormalization and channel Mul/Add
  // folded into the Conv/ConvTranspose/Gemm before them, HardSigmoid/HardSwish decompositions made
  // one operator (the graph TensorRT and ONNX Runtime run; src/canon/canonicalize.h).
  int64_t opset = 0;
  std::map<std::string, std::vector<int64_t>> override_shapes;
  bool simplify = false;
  bool canonicalize = true;

  // Execution: input_shapes_profile has one options object per calibration_eps entry, passed to
  // that provider (ModelOpt's TensorRT shape profiles). calibrate_per_node: bounded-memory
  // calibration, one node at a time.
  std::vector<std::map<std::string, std::string>> input_shapes_profile;
  bool calibrate_per_node = false;

  // Placement: no Q/DQ on the attention core's MatMuls even when selectors bypass the rules;
  // ModelOpt's graph passes (concat_elimination, which placement always does); the precision
  // of custom ops ("Op:fp16" or "Op:[int8,fp32]:[int8]").
  bool disable_mha_qdq = false;
  std::vector<std::string> passes = {"concat_elimination"};
  std::vector<std::string> trt_plugins_precision;

  // Called after each calibration batch with (batches done, total batches).
  std::function<void(int64_t, int64_t)> progress;

  // Q/DQ placement searched for speed under the accuracy budget (ptqkit/autotune.h); off unless
  // autotune.mode is set.
  AutotuneOptions autotune;
};

// What quantization cost on one graph output, quantized vs FP32 on the same samples.
struct OutputLoss {
  std::string output;
  int64_t samples = 0;
  bool is_float = true;
  int64_t rank = 0;
  double cosine_mean = 1.0;  // per-sample cosine similarity (float outputs)
  double cosine_min = 1.0;
  double relative_rmse = 0.0;  // ||q - r|| / ||r|| over all values
  double max_abs_diff = 0.0;
  std::optional<double> top1_agreement;  // rank-2/3 float outputs: argmax over the last axis
  std::optional<double> exact_match;     // non-float outputs: samples exactly equal
  int64_t non_finite = 0;                // NaN/Inf values in the quantized output
};

// A quantized activation and its estimated quantization error from the calibration histogram:
// the mean over nonzero values of |x - QDQ(x)| / |x| with its final amax (clipping and values
// rounded to zero alike), and the share of values beyond the amax. The loss report's likely
// culprits are the largest of these.
struct TensorClipping {
  std::string tensor;
  double relative_error = 0.0;
  double clipped_fraction = 0.0;
  float amax = 0.0f;
  float absmax = 0.0f;
};

// The loss report of a quantize run (QuantizeOptions::eval_samples).
struct LossReport {
  bool evaluated = false;
  std::string not_evaluated_because;  // when !evaluated
  int64_t samples = 0;
  bool held_out = false;   // the samples were not used for calibration
  // Which samples of the calibration data were evaluated (0-based positions in the file, in
  // order): held-out samples are spread evenly through the file (see --eval_samples).
  std::vector<int64_t> sample_indices;
  bool synthetic = false;  // ... and they are synthetic data
  std::string ort_level;   // ONNX Runtime level the quantized model ran at: "basic" | "default"
  std::string mask_input;  // --eval_mask_input: positions where it is 0 were left out
  std::vector<OutputLoss> outputs;
  std::vector<TensorClipping> culprits;  // largest relative_error first, at most 5
  std::string warning;                   // non-empty when the loss passed a warning threshold
  double seconds = 0.0;  // what the report cost: the FP32 reference run plus the quantized model's run
};

// The accuracy-budget search of a quantize run (QuantizeOptions::accuracy_budget).
struct AccuracyBudgetReport {
  bool used = false;
  // What the search's nodes are kept in: "float" (int8/fp8), "int8 weights" (--mixed_precision).
  std::string kept_as = "float";
  std::string metric;  // kl_div | mse | cos | top1
  double budget = 0.0;
  bool met = false;
  int64_t ranked_nodes = 0;                       // nodes in the sensitivity ranking
  std::vector<std::string> excluded_nodes;        // kept in float by the search, most sensitive first
  std::vector<std::pair<int64_t, double>> curve;  // (nodes excluded, divergence), in evaluation order
  int64_t evaluations = 0;                        // full quantize + evaluate runs of the search
};

// --weight_rounding gptq: what it did.
struct WeightRoundingReport {
  std::string method = "nearest";
  int considered = 0;  // quantized weights it looked at
  int rounded = 0;     // weights whose codes it changed
  std::vector<std::pair<std::string, std::string>> not_rounded;  // (weight, why), the others
  // Modelled output error (sum over calibration inputs of |(W_q - W) x|^2) relative to round to
  // nearest, averaged over the weights considered (1 for a weight left as it was).
  double mean_error_ratio = 1.0;
  int conv_biases_corrected = 0;
  int forward_passes = 0;
  double seconds = 0.0;
};

struct QuantizeReport {
  std::string output_path;
  int64_t original_opset = 0;
  int64_t output_opset = 0;
  std::map<std::string, int> quantized_by_op_type;                 // op type -> nodes with Q/DQ inputs
  std::vector<std::pair<std::string, std::string>> left_in_float;  // (node, reason), graph order
  int qdq_pairs = 0;
  // Weight edits of the int8/fp8 pipeline (bias_correction, smoothquant_alpha): Convs whose bias was
  // corrected, MatMul inputs smoothed (their weights rescaled, and a Mul constant or, of those,
  // smoothing_muls_inserted by a Mul inserted ahead of the MatMuls).
  int bias_corrected_convs = 0;
  int smoothed_matmul_inputs = 0;
  int smoothing_muls_inserted = 0;
  int equalized_depthwise_convs = 0;  // depthwise_equalization: inputs scaled per channel
  WeightRoundingReport weight_rounding;
  // Weight-only modes: (MatMul/Gemm node, the format of its weight: int4, int8, nvfp4, mxfp8), graph order.
  std::vector<std::pair<std::string, std::string>> weight_precision;
  // --mixed_precision int8,fp8: each quantized node's format and the sensitivity scores (node
  // scan, the budget's metric) it was chosen by, most sensitive first.
  struct NodeFormat {
    std::string node, format;
    double int8_score = 0.0, fp8_score = 0.0;
  };
  std::vector<NodeFormat> node_formats;
  // ... and the held-out divergence (the budget's metric) of each format candidate scored: the run's
  // format throughout, the other throughout, the per-node mix; the lowest is written.
  std::vector<std::pair<std::string, double>> format_candidates;
  // nvfp4/mxfp8 --quantize_activations: activations quantized in blocks scaled at run time (each
  // also counted in qdq_pairs).
  int dynamic_block_activations = 0;
  // --target_runtime's form of an int8 run ("trt", "ort_cpu"; "trt" for every other mode), the
  // MatMuls whose input that form quantizes at run time (ort_cpu: DynamicQuantizeLinear), and the
  // quantized nodes, by op type, for which that runtime has no integer kernel (they run in float
  // between a DequantizeLinear and a QuantizeLinear; empty for trt, which chooses its kernels itself).
  std::string runtime_form = "trt";
  int dynamic_matmuls = 0;
  int int8_embeddings = 0;  // embedding tables the form stores as INT8 rows
  std::map<std::string, int> without_integer_kernel;
  std::map<std::string, std::string> integer_kernel;  // quantized op type -> the kernel the runtime runs it as
  // Conv/Gemm nodes of a float16 output whose bias ONNX Runtime's WeightBiasQuantization rule
  // (basic level and above) turns into inf (quant/rewrite/ort_bias_overflow.h); 0 for float32 outputs.
  int ort_fp16_bias_overflows = 0;
  // --canonicalize: what was folded before placement, and the largest absolute difference of any
  // graph output between the model as given and as folded, on `canonical_checked_samples`
  // calibration samples (FP32 both, ONNX Runtime basic level). -1: not measured.
  int folded_batchnorms = 0;
  int folded_channel_affines = 0;
  int fused_activations = 0;
  int folded_pads = 0;  // zero Pads made the padding of the Conv after them
  double canonical_max_abs_diff = -1.0;
  int64_t canonical_checked_samples = 0;
  std::string calibration_method;  // the method used (the mode's default when none was given)
  int64_t num_calibration_samples = 0;
  int64_t batch_size = 0;
  bool synthetic_data = false;
  bool calibration_from_cache = false;
  double calibration_seconds = 0.0;
  double total_seconds = 0.0;
  std::vector<std::string> execution_providers;
  LossReport loss;
  AccuracyBudgetReport accuracy_budget;
  AutotuneReport autotune;
};

// Throws ptqkit::Error with a one-line message naming what is wrong.
QuantizeReport Quantize(const QuantizeOptions& options);

}  // namespace ptqkit
