// The last steps every quantization mode shares: the optional float16/bfloat16 conversion of what
// was left in float (--high_precision_dtype) and the atomic save (--use_external_data_format).
#pragma once

#include <onnx/onnx_pb.h>

#include "ptqkit/quantize.h"

namespace ptqkit {

// Updates report->output_opset when the conversion raises it. Throws ptqkit::Error; on error
// nothing is written.
void ConvertAndSave(onnx::ModelProto* model, const QuantizeOptions& options, QuantizeReport* report);

}  // namespace ptqkit
