// ptqkit._ptqkit: the C++ library as seen from Python. Deliberately thin: the Python package
// (python/ptqkit) owns the public signatures, defaults and argument normalisation; this module
// exposes the option structs, runs the library with the GIL released, and turns results into
// plain Python values. Every ptqkit::Error becomes ptqkit.Error (a ValueError) with the C++
// message and a `kind` attribute.
#include <pybind11/pybind11.h>
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <onnx/onnx_pb.h>

#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "arrays.h"
#include "base/io_guard.h"
#include "base/log.h"
#include "cli/progress_bar.h"
#include "cli_entry.h"
#include "runtime/model_inputs.h"
#include "report/quantize_json.h"
#include "options/option_docs.h"
#include "options/option_spec.h"
#include "options/picker_option_table.h"
#include "report/picker_output.h"
#include "report/quantize_summary.h"
#include "runtime/prepared_model.h"
#include "scan/scan_options.h"
#include "ptqkit/calibration.h"
#include "ptqkit/error.h"
#include "ptqkit/picker.h"
#include "ptqkit/quantize.h"
#include "ptqkit/sensitivity.h"
#include "report/scan_outputs.h"
#include "sensitivity/scores_file.h"

namespace py = pybind11;

namespace ptqkit::python {
namespace {

// ptqkit.Error, created once; never freed (module objects live for the interpreter's lifetime).
PyObject* g_error = nullptr;

const char* KindName(Error::Kind kind) {
  switch (kind) {
    case Error::Kind::kInvalidInput: return "invalid_input";
    case Error::Kind::kIo: return "io";
    case Error::Kind::kRuntime: return "runtime";
    case Error::Kind::kUnsupported: return "unsupported";
  }
  return "invalid_input";
}

void TranslateErrors(std::exception_ptr p) {
  try {
    if (p) std::rethrow_exception(p);
  } catch (const Error& e) {
    py::object instance = py::handle(g_error)(e.what());
    instance.attr("kind") = KindName(e.kind());
    PyErr_SetObject(g_error, instance.ptr());
  }
}

// Library messages go to the Python logger "ptqkit" (so applications route and filter them as
// they do their own); `python -m ptqkit` restores the CLI's stderr output while it runs.
void ForwardLogsToPython() {
  log::SetSink([](log::Level level, std::string_view message) {
    py::gil_scoped_acquire gil;
    try {
      static const int kPythonLevels[] = {10, 20, 30, 40};  // DEBUG, INFO, WARNING, ERROR
      py::module_::import("logging").attr("getLogger")("ptqkit").attr("log")(
          kPythonLevels[static_cast<int>(level)], std::string(message));
    } catch (const py::error_already_set&) {
      // A failing logging handler must not turn a quantization into an error.
    }
  });
}

struct CliLogging {
  CliLogging() { log::SetSink(nullptr); }
  ~CliLogging() { ForwardLogsToPython(); }
};

// The CLI's --log_level / --log_file for the length of one call. The level stays set (as after a
// CLI run); the log file is closed again so calls do not leak into each other's files.
class LogSettings {
 public:
  LogSettings(const std::string& level, const std::string& file) : has_file_(!file.empty()) {
    log::SetLevel(log::ParseLevel(level));
    if (has_file_) log::SetFile(file);
  }
  ~LogSettings() {
    if (has_file_) log::SetFile("");
  }
  LogSettings(const LogSettings&) = delete;
  LogSettings& operator=(const LogSettings&) = delete;

 private:
  bool has_file_;
};

// The report as Python values: the --report_json document (report/quantize_json.h), one form for
// both, except that left_in_float is a list of (node, reason) tuples.
py::dict ReportToDict(const QuantizeReport& r) {
  py::dict d = py::module_::import("json").attr("loads")(QuantizeReportToJson(r).dump());
  py::list left;
  for (const auto& [node, why] : r.left_in_float) left.append(py::make_tuple(node, why));
  d["left_in_float"] = left;
  return d;
}

// ptqkit.quantize(): `given` holds each keyword the caller passed, as the text the CLI would read
// (python/ptqkit/_quantize.py writes it), applied through the same option table as the CLI.
py::dict RunQuantize(const std::map<std::string, std::vector<std::string>>& given, const std::optional<py::dict>& arrays,
                     std::function<double(const std::string&)> accuracy_eval) {
  options::QuantizeSettings settings;
  options::ApplyGivenOptions(given, options::kQuantize, settings);
  QuantizeOptions& options = settings.options;
  if (arrays) options.calibration_tensors = ToHostTensors(*arrays);
  options.accuracy_eval = std::move(accuracy_eval);
  QuantizeReport report;
  {
    py::gil_scoped_release release;
    if (!settings.log_file.empty()) {  // the log opens first: keep it off every file the run reads or writes
      IoGuard files = QuantizeFiles(options, QuantizeOutputPath(options));
      files.Output(settings.log_file, "log_file");
      files.Check();
    }
    LogSettings log_settings(settings.log_level, settings.log_file);
    cli::ProgressDisplay progress;  // as in the CLI: a bar on a terminal, else a line every ~10 s
    report = Quantize(options);
    log::Info("{}", FormatQuantizeSummary(report, options));  // the CLI's summary, through logging
  }
  return ReportToDict(report);
}

// The option table for Python (`ptqkit options --format json`): ptqkit.quantize()'s keywords,
// defaults and docs.
py::object QuantizeOptionTableToList() {
  return py::module_::import("json").attr("loads")(options::QuantizeOptionsJson());
}

// ptqkit.sensitivity.score(): `given` holds each keyword the caller passed, as the text the CLI
// would read (python/ptqkit/sensitivity/__init__.py writes it), applied through the option table
// as `ptqkit sensitivity` applies its flags. Returns the scores file's exact text
// (SerializeResult), so Python's json.loads gives what the CLI writes; writes the JSON / HTML only
// when asked, both or neither.
std::string RunScore(const std::map<std::string, std::vector<std::string>>& given, const std::optional<py::dict>& arrays,
                     const std::string& data_label) {
  options::QuantizeSettings settings;
  options::ApplyGivenOptions(given, options::kSensitivity, settings);
  SensitivityOptions options = settings.scan.options;
  UseQuantizeCalibration(settings.options, options);
  std::map<std::string, HostTensor> tensors;
  if (arrays) {
    tensors = ToHostTensors(*arrays);
    options.calibration_tensors = &tensors;
  }
  const std::string& output_json = settings.scan.output_json;
  const std::string& report_path = settings.scan.report;
  const std::string& log_file = settings.log_file;
  py::gil_scoped_release release;
  // Checked by the scan against the model, its external data and the calibration data; the log
  // opens first, so the same check runs here before it.
  options.output_files = {{output_json, "output_json"}, {report_path, "report"}, {log_file, "log_file"}};
  {
    IoGuard files;
    files.Input(options.onnx_path, "onnx_path");
    files.InputFolderFiles(options.calibration_data_path, "calibration_data");
    files.Input(options.calibration_cache, "calibration_cache");
    for (const auto& [path, role] : options.output_files) files.Output(path, role);
    files.Check();
  }
  LogSettings log_settings(settings.log_level, log_file);
  SensitivityResult result;
  {
    cli::ProgressDisplay progress;
    result = ScoreSensitivity(options);
  }
  if (result.calibration_source == "synthetic") {  // the CLI's warning, word for word
    log::Warn("scores come from synthetic inputs: they are directional only; do not pair them with absolute thresholds");
  }
  return sensitivity::WriteScanOutputs(result, {output_json, report_path, data_label, options.calibration_method});
}

// The picker's result and an exclusion's summary as Python values: the JSON documents `ptqkit
// exclude --format json` is made of (report/picker_output.h), one form for both.
py::dict JsonToDict(const nlohmann::json& j) { return py::module_::import("json").attr("loads")(j.dump()); }

py::dict RunSuggestExclusion(const std::map<std::string, double>& scores, const PickerOptions& options) {
  PickResult pick;
  {
    py::gil_scoped_release release;
    pick = SuggestExclusion(scores, options);
  }
  return JsonToDict(sensitivity::PickJson(pick));
}

py::dict RunSummarizeExclusion(const std::map<std::string, double>& scores,
                               const std::vector<std::string>& excluded) {
  const ExclusionSummary s = SummarizeExclusion(scores, excluded);
  nlohmann::json j = sensitivity::SummaryJson(s);
  j["warnings"] = s.warnings;
  return JsonToDict(j);
}

// {input name: rank} of the model's graph inputs, read from the protobuf only (no external data,
// no checks): lets the Python layer tell per-sample arrays (rank - 1) from batches (rank).
// Empty when the file cannot be parsed; the real load reports that properly later.
std::map<std::string, int64_t> ModelInputRanks(const std::string& path) {
  std::map<std::string, int64_t> ranks;
  std::ifstream in(path, std::ios::binary);
  onnx::ModelProto model;
  if (!in || !model.ParseFromIstream(&in)) return ranks;
  for (const InputSpec& spec : ModelInputSpecs(model.graph())) {
    ranks[spec.name] = static_cast<int64_t>(spec.shape.size());
  }
  return ranks;
}

void BindPickerOptions(py::module_& m) {
  py::class_<PickerOptions>(m, "PickerOptions", "ptqkit::PickerOptions")
      .def(py::init<>())
      .def_readwrite("coverage", &PickerOptions::coverage)
      .def_readwrite("threshold", &PickerOptions::threshold)
      .def_readwrite("max_nodes", &PickerOptions::max_nodes)
      .def_readwrite("min_score_floor", &PickerOptions::min_score_floor)
      .def_readwrite("near_tie_ratio", &PickerOptions::near_tie_ratio)
      .def_readwrite("blocks", &PickerOptions::blocks)
      .def_readwrite("block_agg", &PickerOptions::block_agg);
  // The picker's option table: Python's keywords and their defaults are made from it.
  m.def("picker_option_table", [] {
    py::list rows;
    const PickerOptions defaults;
    for (const options::PickerOptionSpec& spec : options::PickerOptionTable()) {
      py::dict row;
      row["name"] = spec.name;
      row["default"] = spec.show(defaults);
      row["help"] = spec.help;
      row["choices"] = spec.choices;
      rows.append(row);
    }
    return rows;
  });
  m.def("picker_options", [](const std::map<std::string, std::string>& given) {
    return options::ApplyPickerOptions(given);
  }, py::arg("given"));
}

}  // namespace
}  // namespace ptqkit::python

PYBIND11_MODULE(_ptqkit, m) {
  using namespace ptqkit::python;
  m.doc() = "ptqkit C++ library binding (use the `ptqkit` package, not this module)";

  g_error = PyErr_NewException("ptqkit.Error", PyExc_ValueError, nullptr);
  m.attr("Error") = py::handle(g_error);  // the module keeps a reference; g_error is borrowed
  py::register_exception_translator(&TranslateErrors);

  BindPickerOptions(m);

  m.def("quantize", &RunQuantize, py::arg("given"), py::arg("arrays"), py::arg("accuracy_eval"));
  m.def("quantize_option_table", &QuantizeOptionTableToList);
  m.def("score", &RunScore, py::arg("given"), py::arg("arrays"), py::arg("data_label"));
  m.def("suggest_exclusion", &RunSuggestExclusion, py::arg("scores"), py::arg("options"));
  m.def("summarize_exclusion", &RunSummarizeExclusion, py::arg("scores"), py::arg("excluded"));
  m.def("parse_shape_list", &ptqkit::ParseShapeList, py::arg("text"));
  m.def("parse_batch_axis_list", &ptqkit::ParseBatchAxisList, py::arg("text"));
  m.def("model_input_ranks", &ModelInputRanks, py::arg("onnx_path"));
  m.def("run_cli", [](const std::vector<std::string>& args) {
    CliLogging cli_logging;
    py::gil_scoped_release release;
    return RunCli(args);
  }, py::arg("args"));

  ForwardLogsToPython();
  // The interpreter must not be called into after it has started shutting down.
  py::module_::import("atexit").attr("register")(py::cpp_function([] { ptqkit::log::SetSink(nullptr); }));
}
