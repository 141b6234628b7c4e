#include "options/sensitivity_option_table.h"

#include <fmt/format.h>

#include "options/option_builders.h"
#include "quant/formats/formats.h"

namespace ptqkit::options {
namespace {

std::vector<std::string> ActivationFormatNames() {
  std::vector<std::string> names;
  for (const auto name : FormatNamesWhere([](const QuantFormat& f) { return !f.placement.weight_only; })) {
    names.emplace_back(name);
  }
  return names;
}


Spec ScanText(const char* name, std::string SensitivityOptions::*field, const char* help) {
  return Text(name, nullptr, help)
      .Apply([field](QuantizeSettings& s, const std::string& v) { s.scan.options.*field = v; })
      .Show([field](const QuantizeSettings& s) { return s.scan.options.*field; })
      .Commands(kSensitivity);
}

Spec ScanCount(const char* name, int64_t SensitivityOptions::*field, int64_t min, const char* help) {
  const std::string flag = fmt::format("--{}", name);
  return Spec(name, Kind::kInt, help)
      .Apply([=](QuantizeSettings& s, const std::string& v) { s.scan.options.*field = ParseCount(flag, v, min, 18); })
      .Show([field](const QuantizeSettings& s) { return fmt::format("{}", s.scan.options.*field); })
      .Commands(kSensitivity);
}

// A file the scan writes, in ScanSettings.
Spec ScanOutput(const char* name, std::string ScanSettings::*field, const char* help) {
  return Text(name, nullptr, help)
      .Metavar("F")
      .Path()
      .PythonNone()
      .Apply([field](QuantizeSettings& s, const std::string& v) { s.scan.*field = v; })
      .Show([field](const QuantizeSettings& s) { return s.scan.*field; })
      .Commands(kSensitivity);
}

}  // namespace

void AddSensitivityOptions(std::vector<OptionSpec>& t) {
  // `calibrate --for_sensitivity` calibrates the tensors a scan of this granularity and scope needs.
  t.push_back(ScanText("granularity", &SensitivityOptions::granularity, "Sensitivity: score op types or single nodes")
                  .Choices({"op_type", "node"})
                  .Commands(kSensitivity | kCalibrate)
                  .Details("`op_type`: one probe per op type, quantizing every node of it; `node`: one probe per "
                           "node. With `calibrate --for_sensitivity`: the scan the table is for."));
  t.push_back(ScanText("metric", &SensitivityOptions::metric,
                       "Sensitivity: how a probe's outputs are compared with FP32's (higher = more sensitive)")
                  .Choices({"kl_div", "mse", "cos"})
                  .Details("per sample and flattened output: `kl_div` = KL(softmax(FP32) ‖ softmax(probe)) (an "
                           "output whose FP32 values are all in [0, 1], i.e. probabilities or a sigmoid map: KL of "
                           "the values normalised to sum 1, no softmax), `mse`, or `cos` = 1 − cosine similarity; "
                           "the mean over samples, summed over outputs"));
  t.push_back(ScanText("target_precision", &SensitivityOptions::target_precision,
                       "Sensitivity: the precision each probe quantizes its target to")
                  .Choices(ActivationFormatNames())  // the formats calibrated per activation (quant/formats/formats.h)
                  .Details("each probe quantizes its target to `int8` or `fp8` (E4M3FN), everything else FP32"));
  t.push_back(List("op_types_scope", nullptr, "Sensitivity: probe only these op types")
                  .Metavar("T")
                  .ApplyList([](QuantizeSettings& s, const std::vector<std::string>& v) { s.scan.options.op_types_scope = v; })
                  .Show([](const QuantizeSettings& s) { return fmt::format("{}", fmt::join(s.scan.options.op_types_scope, " ")); })
                  .Commands(kSensitivity | kCalibrate)
                  .DefaultDoc("quantizable compute, activation, normalization and reduction op types present")
                  .Details("the op types probed; graph plumbing (Cast, Shape, Reshape, ...) is never probed"));
  t.push_back(ScanCount("num_calib_samples", &SensitivityOptions::num_calib_samples, 1,
                        "Sensitivity: samples of synthetic data when none is given")
                  .Metavar("N")
                  .Details("synthetic samples when no data is given (scores are then directional only)"));
  t.push_back(ScanCount("activation_cache_limit_mb", &SensitivityOptions::activation_cache_limit_mb, 0,
                        "Sensitivity: FP32 activations cached for probe sub-graphs (MiB); above it probes run the "
                        "whole model; 0 = always")
                  .Metavar("MB")
                  .Details("FP32 activations kept for probes that run only the sub-graph after their target; above "
                           "it every probe runs the whole model (same scores, slower)"));
  t.push_back(ScanCount("probe_chunk_samples", &SensitivityOptions::probe_chunk_samples, 0,
                        "Sensitivity: samples per chunk of the scan; 0 = as many as the activation cache holds")
                  .Metavar("N")
                  .Details("the FP32 reference caches one chunk's activations at a time and every probe's sub-graph "
                           "runs on it, so memory stays within --activation_cache_limit_mb for any number of samples; "
                           "scores are the same in any chunking (means over samples, added in sample order)"));
  t.push_back(Text("stop_when_settled", nullptr,
                   "Sensitivity: stop sampling a target once its place in the ranking is settled")
                  .Metavar("BOOL")
                  .Flagged()
                  .Commands(kSensitivity)
                  .DefaultDoc("true")
                  .Apply([](QuantizeSettings& s, const std::string& v) {
                    s.scan.options.stop_when_settled = ParseBoolWord("--stop_when_settled", v);
                  })
                  .Show([](const QuantizeSettings& s) {
                    return std::string(s.scan.options.stop_when_settled ? "true" : "false");
                  })
                  .Details("after each chunk of 64 samples, a target whose interval (mean ± 3 standard errors) "
                           "overlaps neither neighbour in the ranking, is within ±5 % of its score, whose upper "
                           "end is under 0.1 % of the total score mass, or which lies wholly on one side of the default "
                           "picker's cut (coverage 0.90) takes no more samples; the scores file records per target "
                           "the samples used, the interval and why it stopped (\"sampling\"). A target whose change "
                           "reaches no graph output is `unreached` (0 samples, score 0). Shards settle among their "
                           "own targets. `false`: every target takes every sample"));
  t.push_back(Text("shard", nullptr,
                   "Sensitivity: K/N: score only targets K, K+N, K+2N, ... (K from 0) and write a part file for --merge")
                  .Metavar("K/N")
                  .CliOnly()
                  .Apply([](QuantizeSettings& s, const std::string& v) { s.scan.shard = v; })
                  .Show([](const QuantizeSettings& s) { return s.scan.shard; })
                  .Commands(kSensitivity)
                  .Details("writes `<M's stem>.sensitivity.partKofN.json` (or --output_json); Python: "
                           "ptqkit.distributed.score() runs the shards on a Ray cluster"));
  t.push_back(List("merge", nullptr,
                   "Sensitivity: merge these part files (every shard of one scan, any order) into the scores file")
                  .Metavar("F")
                  .Path()
                  .CliOnly()
                  .ApplyList([](QuantizeSettings& s, const std::vector<std::string>& v) { s.scan.merge = v; })
                  .Show([](const QuantizeSettings& s) { return fmt::format("{}", fmt::join(s.scan.merge, " ")); })
                  .Commands(kSensitivity)
                  .Details("takes only part files (and --output_json, --report): the parts know their run"));
  t.push_back(ScanOutput("output_json", &ScanSettings::output_json,
                         "Sensitivity: the scores file to write")
                  .DefaultDoc("`<M's stem>.sensitivity.json` beside M (Python: none)")
                  .Details("the scores (JSON): scores, failed and non-finite targets, calibration source, timings"));
  t.push_back(ScanOutput("report", &ScanSettings::report, "Sensitivity: also write a self-contained HTML report here")
                  .Details("a self-contained HTML page: the run, its settings, the ranking, failed targets, warnings and timings"));
  Spec zero = Flag("show_zero_scores", nullptr, "Sensitivity: list targets whose score is 0 too").CliOnly().Commands(kSensitivity);
  zero.spec().apply = [](QuantizeSettings& s, const std::vector<std::string>& v) {
    s.scan.show_zero_scores = v.empty() || ParseBoolWord("--show_zero_scores", v[0]);
  };
  zero.spec().show = [](const QuantizeSettings& s) { return std::string(s.scan.show_zero_scores ? "true" : "false"); };
  t.push_back(std::move(zero));
}

}  // namespace ptqkit::options
