#include "report/scan_outputs.h"

#include <map>

#include "base/atomic_file.h"
#include "report/sensitivity_html.h"

namespace ptqkit::sensitivity {

std::string WriteScanOutputs(const SensitivityResult& result, const ScanOutputs& outputs) {
  const std::string json = SerializeResult(result);
  AtomicFileWriter json_writer, html_writer;
  if (!outputs.json_path.empty()) json_writer.Stage(outputs.json_path, json);
  if (!outputs.html_path.empty()) {
    const std::map<std::string, std::string> settings = {{"onnx_path", result.onnx_path},
                                                         {"calibration_data_path", outputs.data_label},
                                                         {"granularity", result.granularity},
                                                         {"metric", result.metric},
                                                         {"target_precision", result.target_precision},
                                                         {"calibration_method", outputs.method_label}};
    html_writer.Stage(outputs.html_path, RenderHtmlReport(result, nullptr, settings));
  }
  json_writer.Commit();
  html_writer.Commit();
  return json;
}

}  // namespace ptqkit::sensitivity
