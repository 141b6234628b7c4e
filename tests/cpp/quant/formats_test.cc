#include "quant/formats/formats.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <string>

#include "calib/mse_search.h"
#include "ptqkit/error.h"

namespace ptqkit {
namespace {

TEST(Formats, FindsEveryRowByNameAndRefusesOthersNamingTheOption) {
  for (const QuantFormat* f : AllFormats()) EXPECT_EQ(&FindFormat(f->name, "--quantize_mode"), f);
  EXPECT_EQ(FormatNames(), "int8, fp8, int4, nvfp4, mxfp8 or mxfp4");
  EXPECT_EQ(FormatNames(true), "int8 or fp8");
  try {
    FindFormat("int3", "--quantize_mode");
    FAIL() << "int3 accepted";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "unknown --quantize_mode 'int3' (expected int8, fp8, int4, nvfp4, mxfp8 or mxfp4)");
  }
  // A weight-only format is no sensitivity target.
  EXPECT_THROW(FindFormat("int4", "--target_precision", /*activations_only=*/true), Error);
}

TEST(Formats, StorageTypesAndOpsetsAreTheOnnxOnes) {
  const QuantFormat& int8 = FindFormat("int8", "m");
  const QuantFormat& fp8 = FindFormat("fp8", "m");
  const QuantFormat& int4 = FindFormat("int4", "m");
  EXPECT_EQ(int8.storage_type, onnx::TensorProto::INT8);
  EXPECT_EQ(fp8.storage_type, onnx::TensorProto::FLOAT8E4M3FN);
  EXPECT_EQ(int4.storage_type, onnx::TensorProto::INT4);
  EXPECT_EQ(int4.zero_point_storage_type, onnx::TensorProto::UINT4);
  EXPECT_EQ(fp8.min_opset, 21);  // QuantizeLinear's output_dtype: FP8 Q/DQ carry no zero point
  EXPECT_TRUE(fp8.zero_point_free);
  EXPECT_FALSE(int8.zero_point_free || int4.zero_point_free);
  EXPECT_EQ(int4.min_opset, 21);
  EXPECT_EQ(int4.values_per_byte, 2);
  EXPECT_TRUE(int4.placement.weight_only);
  EXPECT_FALSE(int8.placement.weight_only || fp8.placement.weight_only);
}

// Every value of the grid survives quantize -> dequantize with scale 1, and qmax is the largest.
TEST(Formats, ReferenceNumericsRoundTripTheGrid) {
  for (const QuantFormat* f : AllFormats()) {
    SCOPED_TRACE(std::string(f->name));
    EXPECT_EQ(f->dequantize(f->quantize(f->qmax, 1.0f), 1.0f), f->qmax);
    EXPECT_EQ(f->dequantize(f->quantize(f->qmin, 1.0f), 1.0f), f->qmin);
    EXPECT_EQ(f->dequantize(f->quantize(2.0f * f->qmax, 1.0f), 1.0f), f->qmax);  // saturates
    EXPECT_EQ(f->dequantize(f->quantize(0.0f, 1.0f), 1.0f), 0.0f);
    EXPECT_EQ(f->dequantize(f->quantize(-1.0f, 0.5f), 0.5f), -1.0f);
    EXPECT_EQ(f->grid.qmax, f->qmax);
  }
  // FP8's grid is non-uniform: 17 is not representable (step 2 above 16); INT8's is.
  const QuantFormat& fp8 = FindFormat("fp8", "m");
  EXPECT_EQ(fp8.dequantize(fp8.quantize(17.0f, 1.0f), 1.0f), 16.0f);
  EXPECT_EQ(calib::QuantizeDequantize(17.0, 448.0, fp8.grid), 16.0);
  const QuantFormat& int8 = FindFormat("int8", "m");
  EXPECT_EQ(int8.dequantize(int8.quantize(17.0f, 1.0f), 1.0f), 17.0f);
  EXPECT_EQ(calib::QuantizeDequantize(17.0, 127.0, int8.grid), 17.0);
  // INT4 stores the low nibble: -1 is 0xF.
  EXPECT_EQ(FindFormat("int4", "m").quantize(-1.0f, 1.0f), 0x0F);
}

}  // namespace
}  // namespace ptqkit
