// The last steps every quantization mode shares: the optional float16/bfloat16 conversion of what
// was left in float (--high_precision_dtype) and the atomic save (--use_external_data_format).
#pragma once

#include <onnx/onnx_pb.h>

#include "ptqkit/quantize.h"

namespace ptqkit {

// --high_precision_dtype: converts what was left in float. Updates report->output_opset when the
// conversion raises it.
void ConvertPrecision(onnx::ModelProto* model, const QuantizeOptions& options, QuantizeReport* report);
// Checks the model with the ONNX library and writes it (and --report_json). Throws ptqkit::Error;
// on error nothing is written.
void CheckAndSave(onnx::ModelProto* model, const QuantizeOptions& options, const QuantizeReport& report);
// Both, in that order.
void ConvertAndSave(onnx::ModelProto* model, const QuantizeOptions& options, QuantizeReport* report);

}  // namespace ptqkit
