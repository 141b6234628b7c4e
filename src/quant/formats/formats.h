// QuantFormat: everything ptqkit knows about one quantization format, as data. The table in
// formats.cc is the one place where int8, fp8 and int4 differ: placement, the Q/DQ and weight-only
// rewriters, calibration's scale search, the sensitivity scan and the pipelines read these traits
// instead of branching on a format's name. Adding a format is adding a row (plus its scalar
// reference numerics in numerics.h / int4_numerics.h / block_codec.h).
//
// The rows are immutable static data that live for the whole program; pass them by reference or
// pointer. Thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "calib/method.h"
#include "quant/formats/block_codec.h"

namespace ptqkit {

// What the placement rules quantize for a format (DESIGN.md "Placement").
struct PlacementProfile {
  // Only MatMul/Gemm weights, stored quantized in blocks, no activations (the weight-only planner,
  // blocked_weight_search.h, with the row's block_codec); the other fields then do not apply.
  bool weight_only = false;
  bool quantize_conv_transpose = true;
  // Convs with fewer input or output channels stay float.
  int64_t min_conv_channels = 8;
  // min_conv_channels counts the channels of one group (the weight's dims 0 and 1), so depthwise
  // and narrow grouped Convs stay float: TensorRT's FP8 conv kernels want 16-aligned channels per
  // group, and ModelOpt's FP8 mode reads the weight's dims the same way. Otherwise a grouped Conv
  // counts all its input channels.
  bool conv_channels_per_group = false;
  // Convs with a larger kernel volume (product of the spatial dimensions) stay float; 0: no limit.
  int64_t max_conv_kernel_volume = 0;
  // Resize and LayerNormalization after a quantized Conv, and pooling between quantized ops, get
  // input Q/DQ; without it only the compute ops and residual Adds do.
  bool quantize_neighbours = true;
};

struct QuantFormat {
  std::string_view name;  // the --quantize_mode / --target_precision spelling
  // ONNX element types (onnx::TensorProto_DataType_*) of the quantized values, and of the values
  // when zero points are used (asymmetric, e.g. UINT4 for int4).
  int32_t storage_type = 0;
  int32_t zero_point_storage_type = 0;
  // The model is upgraded to at least this opset (and IR version; 0: as loaded) before rewriting.
  int64_t min_opset = 0;
  int64_t min_ir_version = 0;
  int values_per_byte = 1;  // 2: two 4-bit values a byte, element 0 in the low nibble
  // The symmetric grid: scale = amax / qmax; quantized values saturate to [qmin, qmax].
  float qmin = 0.0f;
  float qmax = 0.0f;
  // Weight qmax with --reduce_range (7-bit INT8 weights); 0: the option does not apply.
  float reduced_range_qmax = 0.0f;
  // The grid as calibration's scale search sees it (uniform steps, or the format's own values).
  calib::Grid grid;
  // Reference numerics of one value: the stored bits of x quantized with `scale` (4-bit formats:
  // the low nibble), and back. REQUIRES: scale > 0 and finite.
  uint8_t (*quantize)(float x, float scale) = nullptr;
  float (*dequantize)(uint8_t bits, float scale) = nullptr;
  // Both at once over a tensor, into `out` (may be `values`: numerics.h FakeQuantize*); nullptr for
  // 4-bit formats.
  void (*fake_quantize)(const float* values, float* out, int64_t count, const float* scales, int64_t channels,
                        int64_t inner) = nullptr;
  // `quantize` over a tensor into `out` (numerics.h QuantizeAll*); nullptr for 4-bit formats.
  void (*quantize_all)(const float* values, int64_t count, const float* scales, int64_t channels, int64_t inner,
                       uint8_t* out) = nullptr;
  PlacementProfile placement;
  // Q/DQ pairs carry no zero point: the QuantizeLinear names the storage type with its output_dtype
  // attribute (opset 21, so min_opset is at least 21). Why FP8: ONNX Runtime's default level has
  // rules that read a QuantizeLinear's zero point as an integer one: ReluQuantRewrite drops a Relu
  // before an FP8 Q (as if FP8 clamped negatives) and ClipQuantRewrite throws on an FP8 zero point.
  // Both match only a Q with three inputs. TensorRT's parser builds the same Quantize/Dequantize
  // layers either way (it never gives an FP8 layer a zero-point input). README "Outputs for ONNX
  // Runtime on CPU" has the measurements.
  bool zero_point_free = false;
  // Sensitivity probes of this format run at ONNX Runtime's basic level (the loss report, budget
  // and autotune checks run every format there): the ONNX Runtime bundled with ptqkit (1.30)
  // builds integer-only fusions (QLinearConv) on FP8 Q/DQ at its default level.
  bool ort_cpu_fusions_unsafe = false;
  // Weight-only formats: how a block of weights is encoded (block_codec.h); null otherwise.
  const BlockCodec* block_codec = nullptr;
};

// The row named `name` ("int8", "fp8", "int4", "nvfp4", "mxfp8"). `option` names the option the value came from, for
// the error. With activations_only, weight-only formats are not accepted. Throws ptqkit::Error
// "unknown <option> '<name>' (expected int8, fp8, int4, ...)" otherwise.
const QuantFormat& FindFormat(std::string_view name, std::string_view option, bool activations_only = false);

// The 8-bit fake-quantized format whose values have ONNX element type `type` (int8, fp8), as a
// QuantizeLinear -> DequantizeLinear pair with that zero-point type computes it; nullptr for others.
const QuantFormat* ByteFormatOfType(int32_t type);

// The INT8 weight-only format (one scale per output channel) that --mixed_precision int4,int8
// stores its chosen weights in: not a --quantize_mode of its own.
const QuantFormat& Int8WeightOnlyFormat();

// Every row, in the order the table lists them.
const std::vector<const QuantFormat*>& AllFormats();
// The names of the rows `keep` accepts, in table order (for messages that list them).
std::vector<std::string_view> FormatNamesWhere(bool (*keep)(const QuantFormat&));

// "int8, fp8 or int4": the names of every format (with activations_only, of the calibrated ones).
std::string FormatNames(bool activations_only = false);

// The --calibration_method a run of `format` uses: `given` (ModelOpt's "rtn_dq" read as "rtn"), or
// the format's default when empty (mse for int8/fp8, the block codec's for the weight-only formats).
// Throws ptqkit::Error when the method is unknown or chooses what `format` does not calibrate.
std::string ResolveCalibrationMethod(const QuantFormat& format, const std::string& given);
// The option's help and default, from the method and format tables: "int8/fp8: max | entropy |
// percentile | mse (default mse); int4/nvfp4/...: rtn | awq_clip | awq_lite (default ...)" and
// "`mse` (int8/fp8), `awq_clip` (int4), ...".
std::string CalibrationMethodHelp();
std::string CalibrationMethodDefaults();

}  // namespace ptqkit
