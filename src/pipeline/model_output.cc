#include "pipeline/model_output.h"

#include "base/atomic_file.h"
#include "onnx/model_io.h"
#include "onnx/model_prep.h"
#include "onnx/onnx_library.h"
#include "report/quantize_html.h"
#include "report/quantize_json.h"
#include "quant/rewrite/fp16_conversion.h"

namespace ptqkit {

void ConvertPrecision(onnx::ModelProto* model, const QuantizeOptions& o, QuantizeReport* report) {
  if (o.high_precision_dtype == "fp32") return;
  LowPrecisionOptions low;
  low.type = o.high_precision_dtype == "fp16" ? onnx::TensorProto::FLOAT16 : onnx::TensorProto::BFLOAT16;
  low.op_types_to_exclude = o.op_types_to_exclude_fp16;
  low.direct_io_types = o.direct_io_types;
  ConvertToLowPrecision(model, low);
  report->output_opset = onnxio::DefaultOpset(*model);
}

StagedOutput::StagedOutput(onnx::ModelProto* model, const QuantizeOptions& o, const std::string& output_path) {
  // The library's checker sees every model ptqkit writes: one that fails it is never written.
  onnxio::CheckOutputModel(model, output_path);
  onnxio::SaveOptions save;
  save.external_data = o.use_external_data_format;
  model_.Stage(*model, output_path, save);
}

void StagedOutput::Commit(const QuantizeOptions& o, const QuantizeReport& report) {
  // The reports are staged before anything is renamed, so a failure leaves no file behind.
  AtomicFileWriter report_file, html_file;
  if (!o.report_json.empty()) report_file.Stage(o.report_json, QuantizeReportToJson(report).dump(2) + "\n");
  if (!o.report_html.empty()) html_file.Stage(o.report_html, RenderQuantizeReport(report, o));
  model_.Commit();
  report_file.Commit();
  html_file.Commit();
}

void CheckAndSave(onnx::ModelProto* model, const QuantizeOptions& o, const QuantizeReport& report) {
  StagedOutput(model, o, report.output_path).Commit(o, report);
}

void ConvertAndSave(onnx::ModelProto* model, const QuantizeOptions& o, QuantizeReport* report) {
  ConvertPrecision(model, o, report);
  CheckAndSave(model, o, *report);
}

}  // namespace ptqkit
