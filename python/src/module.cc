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
#include "base/atomic_file.h"
#include "base/io_guard.h"
#include "base/log.h"
#include "cli/progress_bar.h"
#include "cli_entry.h"
#include "pipeline/model_inputs.h"
#include "pipeline/report_json.h"
#include "pipeline/prepared_model.h"
#include "ptqkit/calibration.h"
#include "ptqkit/error.h"
#include "ptqkit/picker.h"
#include "ptqkit/quantize.h"
#include "ptqkit/sensitivity.h"
#include "sensitivity/report_html.h"
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

// The method the run used (the mode's default when none was given), where the report has it.
template <typename Report>
void AddCalibrationMethod(py::dict& d, const Report& r) {
  if constexpr (requires { r.calibration_method; }) d["calibration_method"] = r.calibration_method;
}

py::dict ReportToDict(const QuantizeReport& r) {
  py::dict d;
  AddCalibrationMethod(d, r);
  d["output_path"] = r.output_path;
  d["original_opset"] = r.original_opset;
  d["output_opset"] = r.output_opset;
  d["quantized_by_op_type"] = r.quantized_by_op_type;
  d["left_in_float"] = r.left_in_float;
  d["qdq_pairs"] = r.qdq_pairs;
  d["bias_corrected_convs"] = r.bias_corrected_convs;
  d["smoothed_matmul_inputs"] = r.smoothed_matmul_inputs;
  d["num_calibration_samples"] = r.num_calibration_samples;
  d["batch_size"] = r.batch_size;
  d["synthetic_data"] = r.synthetic_data;
  d["calibration_from_cache"] = r.calibration_from_cache;
  d["calibration_seconds"] = r.calibration_seconds;
  d["total_seconds"] = r.total_seconds;
  d["execution_providers"] = r.execution_providers;
  // One JSON form of the loss report for --report_json and Python (pipeline/report_json.h).
  d["loss"] = py::module_::import("json").attr("loads")(LossReportToJson(r.loss).dump());
  d["accuracy_budget"] = py::module_::import("json").attr("loads")(AccuracyBudgetToJson(r.accuracy_budget).dump());
  return d;
}

py::dict RunQuantize(QuantizeOptions options, const std::optional<py::dict>& arrays,
                     const std::string& log_level, const std::string& log_file) {
  if (arrays) options.calibration_tensors = ToHostTensors(*arrays);
  QuantizeReport report;
  {
    py::gil_scoped_release release;
    if (!log_file.empty()) {  // the log opens first: keep it off every file the run reads or writes
      IoGuard files = QuantizeFiles(options, QuantizeOutputPath(options));
      files.Output(log_file, "log_file");
      files.Check();
    }
    LogSettings log_settings(log_level, log_file);
    cli::ProgressBar bar("calibrating");  // drawn only when stderr is a terminal, as in the CLI
    options.progress = [&bar](int64_t done, int64_t total) { bar.Update(done, total); };
    report = Quantize(options);
  }
  return ReportToDict(report);
}

// Returns the scores file's exact text (SerializeResult), so Python's json.loads gives what
// `ptqkit sensitivity` writes. Writes the JSON / HTML only when asked, both or neither.
std::string RunScore(SensitivityOptions options, const std::optional<py::dict>& arrays,
                     const std::string& output_json, const std::string& report_path,
                     const std::string& data_label, const std::string& log_level,
                     const std::string& log_file) {
  std::map<std::string, HostTensor> tensors;
  if (arrays) {
    tensors = ToHostTensors(*arrays);
    options.calibration_tensors = &tensors;
  }
  py::gil_scoped_release release;
  // Checked by the scan against the model, its external data and the calibration data; the log
  // opens first, so the same check runs here before it.
  options.output_files = {{output_json, "output_json"}, {report_path, "report"}, {log_file, "log_file"}};
  {
    IoGuard files;
    files.Input(options.onnx_path, "onnx_path");
    files.InputFolderFiles(options.calibration_data_path, "calibration_data");
    for (const auto& [path, role] : options.output_files) files.Output(path, role);
    files.Check();
  }
  LogSettings log_settings(log_level, log_file);
  SensitivityResult result;
  {
    cli::ProgressBar bar("probing");
    options.progress = [&bar](int64_t done, int64_t total) { bar.Update(done, total); };
    result = ScoreSensitivity(options);
  }
  if (result.calibration_source == "synthetic") {  // the CLI's warning, word for word
    log::Warn("scores come from synthetic inputs: they are directional only; do not pair them with absolute thresholds");
  }
  const std::string json = sensitivity::SerializeResult(result);
  AtomicFileWriter json_writer, html_writer;
  if (!output_json.empty()) json_writer.Stage(output_json, json);
  if (!report_path.empty()) {
    const std::map<std::string, std::string> settings = {
        {"onnx_path", options.onnx_path},
        {"calibration_data_path", data_label},
        {"granularity", options.granularity},
        {"metric", options.metric},
        {"target_precision", options.target_precision},
        {"calibration_method", options.calibration_method}};
    html_writer.Stage(report_path, sensitivity::RenderHtmlReport(result, nullptr, settings));
  }
  json_writer.Commit();
  html_writer.Commit();
  return json;
}

py::list RankingToList(const PickResult& pick) {
  py::list ranking;
  for (size_t i = 0; i < pick.ranking.size(); ++i) {
    const RankedEntry& e = pick.ranking[i];
    py::dict d;
    d["name"] = e.name;
    d["is_block"] = e.is_block;
    d["score"] = e.score;
    d["max_score"] = e.max_score;
    d["sum_score"] = e.sum_score;
    d["mean_score"] = e.mean_score;
    d["members"] = e.members;
    d["selected"] = i < pick.cut;
    ranking.append(d);
  }
  return ranking;
}

py::dict RunSuggestExclusion(const std::map<std::string, double>& scores, const PickerOptions& options) {
  PickResult pick;
  {
    py::gil_scoped_release release;
    pick = SuggestExclusion(scores, options);
  }
  py::dict d;
  d["excluded"] = pick.excluded;
  d["cut_rule"] = pick.cut_rule;
  d["block_mode"] = pick.block_mode;
  d["ranking"] = RankingToList(pick);
  d["warnings"] = pick.warnings;
  return d;
}

py::dict RunSummarizeExclusion(const std::map<std::string, double>& scores,
                               const std::vector<std::string>& excluded) {
  const ExclusionSummary s = SummarizeExclusion(scores, excluded);
  py::dict d;
  d["coverage_pct"] = s.coverage_pct;
  d["num_excluded"] = s.num_excluded;
  d["num_previously_quantized"] = s.num_previously_quantized;
  d["num_remaining_quantized"] = s.num_remaining_quantized;
  d["num_non_finite"] = s.num_non_finite;
  d["excluded_mass"] = s.excluded_mass;
  d["total_mass"] = s.total_mass;
  d["warnings"] = s.warnings;
  return d;
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

// The int4 options arrive with the int4 mode; bound when the struct has them, so this binding
// builds before and after that change (Python checks hasattr before setting them).
template <typename Options>
void BindInt4Options(py::class_<Options>& c) {
  if constexpr (requires { &Options::block_size; }) c.def_readwrite("block_size", &Options::block_size);
  if constexpr (requires { &Options::use_zero_point; }) c.def_readwrite("use_zero_point", &Options::use_zero_point);
  if constexpr (requires { &Options::awqclip_alpha_step; }) {
    c.def_readwrite("awqclip_alpha_step", &Options::awqclip_alpha_step);
  }
  if constexpr (requires { &Options::awqclip_alpha_min; }) {
    c.def_readwrite("awqclip_alpha_min", &Options::awqclip_alpha_min);
  }
}

void BindQuantizeOptions(py::module_& m) {
  py::class_<QuantizeOptions> options(m, "QuantizeOptions", "ptqkit::QuantizeOptions (defaults = the CLI's)");
  options.def(py::init<>())
      .def_readwrite("onnx_path", &QuantizeOptions::onnx_path)
      .def_readwrite("output_path", &QuantizeOptions::output_path)
      .def_readwrite("quantize_mode", &QuantizeOptions::quantize_mode)
      .def_readwrite("calibration_data_path", &QuantizeOptions::calibration_data_path)
      .def_readwrite("num_synthetic_samples", &QuantizeOptions::num_synthetic_samples)
      .def_readwrite("calibration_method", &QuantizeOptions::calibration_method)
      .def_readwrite("percentile", &QuantizeOptions::percentile)
      .def_readwrite("calibration_shapes", &QuantizeOptions::calibration_shapes)
      .def_readwrite("calibration_batch_size", &QuantizeOptions::calibration_batch_size)
      .def_readwrite("calibration_batch_axis", &QuantizeOptions::calibration_batch_axis)
      .def_readwrite("calibration_eps", &QuantizeOptions::calibration_eps)
      .def_readwrite("trt_plugins", &QuantizeOptions::trt_plugins)
      .def_readwrite("intra_op_num_threads", &QuantizeOptions::intra_op_num_threads)
      .def_readwrite("op_types_to_quantize", &QuantizeOptions::op_types_to_quantize)
      .def_readwrite("op_types_to_exclude", &QuantizeOptions::op_types_to_exclude)
      .def_readwrite("nodes_to_quantize", &QuantizeOptions::nodes_to_quantize)
      .def_readwrite("nodes_to_exclude", &QuantizeOptions::nodes_to_exclude)
      .def_readwrite("dq_only", &QuantizeOptions::dq_only)
      .def_readwrite("target_runtime", &QuantizeOptions::target_runtime)
      .def_readwrite("reduce_range", &QuantizeOptions::reduce_range)
      .def_readwrite("bias_correction", &QuantizeOptions::bias_correction)
      .def_readwrite("smoothquant_alpha", &QuantizeOptions::smoothquant_alpha)
      .def_readwrite("high_precision_dtype", &QuantizeOptions::high_precision_dtype)
      .def_readwrite("op_types_to_exclude_fp16", &QuantizeOptions::op_types_to_exclude_fp16)
      .def_readwrite("direct_io_types", &QuantizeOptions::direct_io_types)
      .def_readwrite("use_external_data_format", &QuantizeOptions::use_external_data_format)
      .def_readwrite("eval_samples", &QuantizeOptions::eval_samples)
      .def_readwrite("report_json", &QuantizeOptions::report_json)
      .def_readwrite("report_html", &QuantizeOptions::report_html)
      .def_readwrite("accuracy_budget", &QuantizeOptions::accuracy_budget)
      .def_readwrite("accuracy_budget_metric", &QuantizeOptions::accuracy_budget_metric)
      .def_readwrite("accuracy_eval", &QuantizeOptions::accuracy_eval)
      .def_readwrite("save_calibration_cache", &QuantizeOptions::save_calibration_cache)
      .def_readwrite("calibration_cache", &QuantizeOptions::calibration_cache);
  BindInt4Options(options);
}

void BindSensitivityOptions(py::module_& m) {
  py::class_<SensitivityOptions>(m, "SensitivityOptions", "ptqkit::SensitivityOptions (defaults = the CLI's)")
      .def(py::init<>())
      .def_readwrite("onnx_path", &SensitivityOptions::onnx_path)
      .def_readwrite("calibration_data_path", &SensitivityOptions::calibration_data_path)
      .def_readwrite("num_calib_samples", &SensitivityOptions::num_calib_samples)
      .def_readwrite("granularity", &SensitivityOptions::granularity)
      .def_readwrite("metric", &SensitivityOptions::metric)
      .def_readwrite("target_precision", &SensitivityOptions::target_precision)
      .def_readwrite("calibration_method", &SensitivityOptions::calibration_method)
      .def_readwrite("op_types_scope", &SensitivityOptions::op_types_scope)
      .def_readwrite("calibration_shapes", &SensitivityOptions::calibration_shapes)
      .def_readwrite("calibration_batch_size", &SensitivityOptions::calibration_batch_size)
      .def_readwrite("calibration_batch_axis", &SensitivityOptions::calibration_batch_axis)
      .def_readwrite("calibration_eps", &SensitivityOptions::calibration_eps)
      .def_readwrite("trt_plugins", &SensitivityOptions::trt_plugins)
      .def_readwrite("intra_op_num_threads", &SensitivityOptions::intra_op_num_threads)
      .def_readwrite("activation_cache_limit_mb", &SensitivityOptions::activation_cache_limit_mb)
      .def_readwrite("calibration_cache", &SensitivityOptions::calibration_cache);
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
}

}  // namespace
}  // namespace ptqkit::python

PYBIND11_MODULE(_ptqkit, m) {
  using namespace ptqkit::python;
  m.doc() = "ptqkit C++ library binding (use the `ptqkit` package, not this module)";

  g_error = PyErr_NewException("ptqkit.Error", PyExc_ValueError, nullptr);
  m.attr("Error") = py::handle(g_error);  // the module keeps a reference; g_error is borrowed
  py::register_exception_translator(&TranslateErrors);

  BindQuantizeOptions(m);
  BindSensitivityOptions(m);
  BindPickerOptions(m);

  m.def("quantize", &RunQuantize, py::arg("options"), py::arg("arrays"), py::arg("log_level"),
        py::arg("log_file"));
  m.def("score", &RunScore, py::arg("options"), py::arg("arrays"), py::arg("output_json"),
        py::arg("report"), py::arg("data_label"), py::arg("log_level"), py::arg("log_file"));
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
