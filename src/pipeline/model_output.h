// The last steps every quantization mode shares: the optional float16/bfloat16 conversion of what
// was left in float (--high_precision_dtype) and the atomic save (--use_external_data_format).
#pragma once

#include <onnx/onnx_pb.h>

#include <string>

#include "onnx/model_io.h"
#include "ptqkit/quantize.h"

namespace ptqkit {

// --high_precision_dtype: converts what was left in float. Updates report->output_opset when the
// conversion raises it.
void ConvertPrecision(onnx::ModelProto* model, const QuantizeOptions& options, QuantizeReport* report);
// The output model written but not yet visible: the constructor checks the model with the ONNX
// library and writes it to temporary files beside --output_path; Commit() writes --report_json /
// --report_html and renames everything into place. Between the two the caller may reuse the
// ModelProto (the loss report folds its weights in place). Destroyed without Commit(), nothing is
// left behind. Throws ptqkit::Error.
class StagedOutput {
 public:
  StagedOutput(onnx::ModelProto* model, const QuantizeOptions& options, const std::string& output_path);
  void Commit(const QuantizeOptions& options, const QuantizeReport& report);

 private:
  onnxio::ModelFileWriter model_;
};

// StagedOutput and Commit at once. Throws ptqkit::Error; on error nothing is written.
void CheckAndSave(onnx::ModelProto* model, const QuantizeOptions& options, const QuantizeReport& report);
// Both, in that order.
void ConvertAndSave(onnx::ModelProto* model, const QuantizeOptions& options, QuantizeReport* report);

}  // namespace ptqkit
