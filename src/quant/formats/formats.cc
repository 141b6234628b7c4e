#include "quant/formats/formats.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <onnx/onnx_pb.h>

#include <algorithm>

#include "ptqkit/error.h"
#include "quant/formats/block_codec.h"
#include "quant/formats/int4_numerics.h"
#include "quant/formats/numerics.h"

namespace ptqkit {
namespace {

uint8_t Int8Bits(float x, float scale) { return static_cast<uint8_t>(QuantizeInt8(x, scale)); }
float Int8Value(uint8_t bits, float scale) { return DequantizeInt8(static_cast<int8_t>(bits), scale); }

float Fp8Value(uint8_t bits, float scale) { return Float8E4M3FNToFloat(bits) * scale; }

uint8_t Int4Bits(float x, float scale) { return static_cast<uint8_t>(QuantizeInt4(x, scale)) & 0x0F; }
float Int4Value(uint8_t bits, float scale) {
  const int v = bits & 0x0F;
  return DequantizeInt4(static_cast<int8_t>(v >= 8 ? v - 16 : v), scale);
}

// INT8, symmetric: TensorRT's explicit-quantization rules (DESIGN.md "Placement").
const QuantFormat kInt8 = {
    .name = "int8",
    .storage_type = onnx::TensorProto_DataType_INT8,
    .zero_point_storage_type = onnx::TensorProto_DataType_INT8,
    .min_opset = 13,  // per-axis Q/DQ
    .values_per_byte = 1,
    .qmin = -128.0f,
    .qmax = kInt8QuantMax,
    .reduced_range_qmax = kInt8ReducedRangeMax,
    .grid = {.qmax = kInt8QuantMax, .nearest = nullptr},  // 127 uniform steps
    .quantize = Int8Bits,
    .dequantize = Int8Value,
    .fake_quantize = FakeQuantizeInt8,
    .quantize_all = QuantizeAllInt8,
    .placement = {},
};

// FP8 E4M3FN: amax maps to 448 (the whole grid, not ModelOpt's 448/127 scaling). Placement as
// ModelOpt's FP8 mode: only Conv, Gemm, MatMul and residual Add, and no Convs that TensorRT's FP8
// kernels do not cover.
const QuantFormat kFp8 = {
    .name = "fp8",
    .storage_type = onnx::TensorProto_DataType_FLOAT8E4M3FN,
    .zero_point_storage_type = onnx::TensorProto_DataType_FLOAT8E4M3FN,
    .min_opset = 21,  // FLOAT8E4M3FN Q/DQ from 19; a QuantizeLinear's output_dtype (zero_point_free) from 21
    .values_per_byte = 1,
    .qmin = -kFloat8E4M3FNMax,
    .qmax = kFloat8E4M3FNMax,
    .grid = {.qmax = kFloat8E4M3FNMax, .nearest = NearestFloat8E4M3FN},  // non-uniform
    .quantize = QuantizeFloat8E4M3FN,
    .dequantize = Fp8Value,
    .fake_quantize = FakeQuantizeFloat8E4M3FN,
    .quantize_all = QuantizeAllFloat8E4M3FN,
    .placement = {.quantize_conv_transpose = false,
                  .min_conv_channels = 17,
                  .conv_channels_per_group = true,
                  .max_conv_kernel_volume = 32,
                  .quantize_neighbours = false},
    .zero_point_free = true,
    .ort_cpu_fusions_unsafe = true,
};

uint8_t Fp4Bits(float x, float scale) { return QuantizeFloat4E2M1(x, scale); }
float Fp4Value(uint8_t bits, float scale) { return Float4E2M1ToFloat(bits) * scale; }

constexpr BlockCodec kInt4Codec = {.element = BlockElement::kInt4,
                                   .scale_code = BlockScaleCode::kFloat,
                                   .element_max = static_cast<float>(kInt4Max),
                                   .zero_points = true};
constexpr BlockCodec kNvfp4Codec = {.element = BlockElement::kE2M1,
                                    .scale_code = BlockScaleCode::kE4M3TimesGlobal,
                                    .element_max = kFloat4E2M1Max,
                                    .fixed_block_size = 16,
                                    .ort_cpu_min_opset = 21,
                                    .default_method = "rtn",
                                    .trt_dynamic_quantize = "TRT_FP4DynamicQuantize"};
constexpr BlockCodec kMxfp8Codec = {.element = BlockElement::kE4M3,
                                    .scale_code = BlockScaleCode::kPowerOfTwo,
                                    .element_max = kFloat8E4M3FNMax,
                                    .fixed_block_size = 32,
                                    .ort_cpu_min_opset = 21,
                                    .default_method = "rtn",
                                    .trt_dynamic_quantize = "TRT_MXFP8DynamicQuantize"};
constexpr BlockCodec kMxfp4Codec = {.element = BlockElement::kE2M1,
                                    .scale_code = BlockScaleCode::kPowerOfTwo,
                                    .element_max = kFloat4E2M1Max,
                                    .fixed_block_size = 32,
                                    .ort_cpu_min_opset = 21,
                                    .default_method = "rtn"};

// INT4 weight-only: blocked DequantizeLinear on MatMul/Gemm weights (blocked_weight_search.h).
const QuantFormat kInt4 = {
    .name = "int4",
    .storage_type = onnx::TensorProto_DataType_INT4,
    .zero_point_storage_type = onnx::TensorProto_DataType_UINT4,
    .min_opset = 21,        // blocked DequantizeLinear, INT4/UINT4
    .min_ir_version = 10,   // INT4/UINT4 element types
    .values_per_byte = 2,
    .qmin = static_cast<float>(kInt4Min),
    .qmax = static_cast<float>(kInt4Max),
    .grid = {.qmax = static_cast<double>(kInt4Max), .nearest = nullptr},
    .quantize = Int4Bits,
    .dequantize = Int4Value,
    .placement = {.weight_only = true},
    .block_codec = &kInt4Codec,
};

// A weight-only row whose values are FLOAT4E2M1 (nvfp4, mxfp4): the block codec says how blocks
// are scaled; `min_opset` is what the scales' type needs (FLOAT4E2M1 itself: 23).
constexpr QuantFormat E2M1WeightOnly(std::string_view name, int64_t min_opset, const BlockCodec* codec) {
  return {
      .name = name,
      .storage_type = onnx::TensorProto_DataType_FLOAT4E2M1,
      .zero_point_storage_type = 0,
      .min_opset = min_opset,
      .min_ir_version = 11,  // FLOAT4E2M1 element type
      .values_per_byte = 2,
      .qmin = -kFloat4E2M1Max,
      .qmax = kFloat4E2M1Max,
      .grid = {.qmax = kFloat4E2M1Max, .nearest = NearestFloat4E2M1},
      .quantize = Fp4Bits,
      .dequantize = Fp4Value,
      .placement = {.weight_only = true},
      .block_codec = codec,
  };
}

// NVFP4 weight-only: E2M1 values in blocks of 16, E4M3 block scales times a float scale per
// tensor, as the two-level DequantizeLinear TensorRT reads (block_codec.h).
constexpr QuantFormat kNvfp4 = E2M1WeightOnly("nvfp4", 23, &kNvfp4Codec);

// MXFP8 weight-only: E4M3 values in blocks of 32 sharing a power-of-two (E8M0) scale.
const QuantFormat kMxfp8 = {
    .name = "mxfp8",
    .storage_type = onnx::TensorProto_DataType_FLOAT8E4M3FN,
    .zero_point_storage_type = 0,
    .min_opset = 24,       // ONNX's checker takes FLOAT8E8M0 DequantizeLinear scales from opset 24
    .min_ir_version = 11,  // FLOAT8E8M0 element type
    .values_per_byte = 1,
    .qmin = -kFloat8E4M3FNMax,
    .qmax = kFloat8E4M3FNMax,
    .grid = {.qmax = kFloat8E4M3FNMax, .nearest = NearestFloat8E4M3FN},
    .quantize = QuantizeFloat8E4M3FN,
    .dequantize = Fp8Value,
    .placement = {.weight_only = true},
    .block_codec = &kMxfp8Codec,
};

// MXFP4 weight-only (OCP MX): E2M1 values in blocks of 32 sharing a power-of-two (E8M0) scale, the
// smallest 2^e >= amax / 6. TensorRT has no dynamic MXFP4 quantizer, so activations stay float.
constexpr QuantFormat kMxfp4 = E2M1WeightOnly("mxfp4", 24, &kMxfp4Codec);  // FLOAT8E8M0 scales: opset 24

constexpr BlockCodec kInt8WeightCodec = {.element = BlockElement::kInt8,
                                         .scale_code = BlockScaleCode::kFloat,
                                         .element_max = kInt8QuantMax,
                                         .fixed_block_size = -1};

const QuantFormat kInt8WeightOnly = {
    .name = "int8",
    .storage_type = onnx::TensorProto_DataType_INT8,
    .zero_point_storage_type = onnx::TensorProto_DataType_INT8,
    .min_opset = 21,  // as the int4 weights beside it
    .min_ir_version = 10,
    .values_per_byte = 1,
    .qmin = -128.0f,
    .qmax = kInt8QuantMax,
    .grid = {.qmax = kInt8QuantMax, .nearest = nullptr},
    .quantize = Int8Bits,
    .dequantize = Int8Value,
    .placement = {.weight_only = true},
    .block_codec = &kInt8WeightCodec,
};

}  // namespace

const QuantFormat& Int8WeightOnlyFormat() { return kInt8WeightOnly; }

const std::vector<const QuantFormat*>& AllFormats() {
  static const std::vector<const QuantFormat*> kAll = {&kInt8, &kFp8, &kInt4, &kNvfp4, &kMxfp8, &kMxfp4};
  return kAll;
}

const QuantFormat* ByteFormatOfType(int32_t type) {
  for (const QuantFormat* f : AllFormats()) {
    if (f->values_per_byte == 1 && f->storage_type == type && f->fake_quantize) return f;
  }
  return nullptr;
}

std::vector<std::string_view> FormatNamesWhere(bool (*keep)(const QuantFormat&)) {
  std::vector<std::string_view> names;
  for (const QuantFormat* f : AllFormats()) {
    if (keep(*f)) names.push_back(f->name);
  }
  return names;
}

std::string FormatNames(bool activations_only) {
  const std::vector<std::string_view> names =
      activations_only ? FormatNamesWhere([](const QuantFormat& f) { return !f.placement.weight_only; })
                       : FormatNamesWhere([](const QuantFormat&) { return true; });
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    out += names[i];
  }
  return out;
}

const QuantFormat& FindFormat(std::string_view name, std::string_view option, bool activations_only) {
  for (const QuantFormat* f : AllFormats()) {
    if (f->name == name && (!activations_only || !f->placement.weight_only)) return *f;
  }
  throw Error(fmt::format("unknown {} '{}' (expected {})", option, name, FormatNames(activations_only)));
}

std::string ResolveCalibrationMethod(const QuantFormat& format, const std::string& given) {
  const bool weight_only = format.placement.weight_only;
  if (given.empty()) {
    return weight_only ? std::string(format.block_codec->default_method) : std::string(calib::kDefaultActivationMethod);
  }
  const std::string method = calib::CanonicalMethodName(given);
  const calib::MethodRow* row = calib::FindMethodRow(method);
  const auto names = [](calib::MethodTarget target) { return calib::MethodNames(target); };
  if (row == nullptr) {
    throw Error(fmt::format("unknown --calibration_method '{}' (expected {} for int8/fp8, {} for the weight-only "
                            "modes)",
                            given, fmt::join(names(calib::MethodTarget::kActivationRanges), ", "),
                            fmt::join(names(calib::MethodTarget::kWeights), ", ")));
  }
  if (!weight_only && row->target == calib::MethodTarget::kWeights) {
    const auto weight_only_formats = FormatNamesWhere([](const QuantFormat& f) { return f.placement.weight_only; });
    throw Error(fmt::format("--calibration_method {} applies to the weight-only modes ({}) only (int8/fp8 take {})",
                            method, fmt::join(weight_only_formats, ", "),
                            fmt::join(names(calib::MethodTarget::kActivationRanges), ", ")));
  }
  if (weight_only && row->target == calib::MethodTarget::kActivationRanges) {
    throw Error(fmt::format("--calibration_method {} does not apply to --quantize_mode {} (expected {}; {} calibrate "
                            "int8/fp8 activations)",
                            method, format.name, fmt::join(names(calib::MethodTarget::kWeights), ", "),
                            fmt::join(names(calib::MethodTarget::kActivationRanges), ", ")));
  }
  return method;
}

namespace {

// The weight-only formats grouped by their default method, in table order of first appearance.
std::vector<std::pair<std::string, std::vector<std::string_view>>> WeightOnlyDefaults() {
  std::vector<std::pair<std::string, std::vector<std::string_view>>> groups;
  for (const QuantFormat* f : AllFormats()) {
    if (!f->placement.weight_only) continue;
    const std::string method = f->block_codec->default_method;
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == method; });
    if (it == groups.end()) it = groups.insert(groups.end(), {method, {}});
    it->second.push_back(f->name);
  }
  return groups;
}

std::string Joined(const std::vector<std::string_view>& names, const char* separator) {
  return fmt::format("{}", fmt::join(names, separator));
}

}  // namespace

std::string CalibrationMethodHelp() {
  const auto activation = FormatNamesWhere([](const QuantFormat& f) { return !f.placement.weight_only; });
  const auto weight_only = FormatNamesWhere([](const QuantFormat& f) { return f.placement.weight_only; });
  std::vector<std::string> defaults;
  for (const auto& [method, formats] : WeightOnlyDefaults()) {
    defaults.push_back(fmt::format("{} for {}", method, Joined(formats, "/")));
  }
  return fmt::format("{}: {} (default {}); {}: {} (default {})", Joined(activation, "/"),
                     fmt::join(calib::MethodNames(calib::MethodTarget::kActivationRanges), " | "),
                     calib::kDefaultActivationMethod, Joined(weight_only, "/"),
                     fmt::join(calib::MethodNames(calib::MethodTarget::kWeights), " | "), fmt::join(defaults, ", "));
}

std::string CalibrationMethodDefaults() {
  const auto activation = FormatNamesWhere([](const QuantFormat& f) { return !f.placement.weight_only; });
  std::vector<std::string> parts = {fmt::format("`{}` ({})", calib::kDefaultActivationMethod, Joined(activation, "/"))};
  for (const auto& [method, formats] : WeightOnlyDefaults()) {
    parts.push_back(fmt::format("`{}` ({})", method, Joined(formats, ", ")));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace ptqkit
