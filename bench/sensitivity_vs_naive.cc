// Sensitivity scan against the naive algorithm (what ModelOpt does): for every target, run a whole
// `quantize` (load, plan, calibrate, rewrite, save) with only that target selected, load the
// result and compare its outputs with the FP32 model. Same model, data, metric and machine, in one
// run. A benchmark, never a test.
//
//   build/bench/sensitivity_vs_naive MODEL.onnx DATA.npy [granularity=node] [batch=0] [threads=0]
//
// batch 0 runs both with their defaults (the scan calibrates and evaluates a dynamic-batch model
// in batches of 16; quantize calibrates in batches of 1 and the naive evaluation follows it);
// batch N > 0 forces N on both.
// Prints both wall times, the speed-up, the number of targets, and the largest relative difference
// between the two algorithms' scores (they compute the same thing, so it should be ~0).
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/log.h"
#include "runtime/prepared_model.h"
#include "ptqkit/quantize.h"
#include "ptqkit/sensitivity.h"
#include "runtime/session.h"
#include "sensitivity/metrics.h"

using namespace ptqkit;
using Clock = std::chrono::steady_clock;

static double Seconds(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
// Process CPU seconds: with threads=1 this is the work done, robust to other load on the machine.
static double CpuSeconds() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

static std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// All batches' outputs of one model.
static std::vector<std::vector<HostTensor>> RunAll(const std::string& bytes, const CalibrationData& data,
                                                   const RuntimeOptions& runtime) {
  InferenceSession session(bytes, runtime);
  std::vector<std::vector<HostTensor>> out;
  for (int64_t b = 0; b < data.num_batches; ++b) {
    out.push_back(session.Run(data.set.ReadBatch(b, data.batch_size), session.output_names()));
  }
  return out;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fmt::print(stderr, "usage: {} MODEL.onnx DATA.npy [granularity=node] [batch=0] [threads=0]\n", argv[0]);
    return 2;
  }
  const std::string model_path = argv[1], data_path = argv[2];
  const std::string granularity = argc > 3 ? argv[3] : "node";
  const int64_t batch = argc > 4 ? std::atoll(argv[4]) : 0;
  const int threads = argc > 5 ? std::atoi(argv[5]) : 0;
  log::SetLevel(log::Level::kError);

  SensitivityOptions o;
  o.onnx_path = model_path;
  o.calibration_data_path = data_path;
  o.granularity = granularity;
  o.calibration_batch_size = batch;
  o.intra_op_num_threads = threads;
  auto t = Clock::now();
  double c = CpuSeconds();
  const auto scan = ScoreSensitivity(o);
  const double scan_s = Seconds(t), scan_cpu = CpuSeconds() - c;

  // Naive: FP32 reference once (in its favour), then a full quantize + evaluation per target.
  t = Clock::now();
  c = CpuSeconds();
  const RuntimeOptions runtime{{"cpu"}, {}, threads};
  PreparedModel prepared = LoadPreparedModel(model_path);
  DataRequest request;
  request.path = data_path;
  request.batch_size = batch;
  const CalibrationData data = OpenCalibrationData(prepared, request);
  std::string fp32_bytes;
  prepared.proto.SerializeToString(&fp32_bytes);
  const auto reference = RunAll(fp32_bytes, data, runtime);
  const auto metric = sensitivity::ParseMetric(o.metric);
  const std::string probe_path = (std::filesystem::temp_directory_path() / "ptqkit_naive_probe.onnx").string();
  double max_rel_diff = 0.0;
  std::string worst;
  double largest = 0.0;
  for (const auto& [target, score] : scan.scores) largest = std::max(largest, score);
  for (const auto& [target, scan_score] : scan.scores) {
    QuantizeOptions q;
    q.onnx_path = model_path;
    q.output_path = probe_path;
    q.calibration_data_path = data_path;
    q.calibration_method = o.calibration_method;
    q.calibration_batch_size = batch;
    q.intra_op_num_threads = threads;
    (granularity == "node" ? q.nodes_to_quantize : q.op_types_to_quantize) = {target};
    Quantize(q);
    const auto probe = RunAll(ReadFile(probe_path), data, runtime);
    double score = 0.0;
    for (size_t k = 0; k < reference[0].size(); ++k) {
      double sum = 0.0;
      int64_t count = 0;
      for (size_t b = 0; b < reference.size(); ++b) {
        const HostTensor& r = reference[b][k];
        const int64_t rows = r.shape.empty() ? 1 : r.shape[0];
        const int64_t per = r.NumElements() / std::max<int64_t>(rows, 1);
        for (int64_t s = 0; s < rows; ++s, ++count) {
          sum += sensitivity::CompareSample(metric, r.Data<float>() + s * per, probe[b][k].Data<float>() + s * per,
                                            static_cast<size_t>(per));
        }
      }
      score += sum / static_cast<double>(count);
    }
    // Relative to the largest score: tiny scores are float noise in both algorithms.
    const double rel = std::abs(score - scan_score) / std::max(largest, 1e-12);
    if (rel > max_rel_diff) {
      max_rel_diff = rel;
      worst = fmt::format("{} (scan {:.6g}, naive {:.6g})", target, scan_score, score);
    }
  }
  const double naive_s = Seconds(t), naive_cpu = CpuSeconds() - c;
  std::filesystem::remove(probe_path);

  fmt::print("{} ({} granularity): {} scored targets, {} failed, {} samples, batch {}\n", model_path, granularity,
             scan.scores.size(), scan.failed.size(), scan.num_calibration_samples,
             batch ? std::to_string(batch) : std::string("defaults"));
  fmt::print("scan   {:8.2f} s  (calibration {:.2f} s, reference {:.2f} s, probes {:.2f} s)\n", scan_s,
             scan.timings.at("calibration_s"), scan.timings.at("reference_s"), scan.timings.at("probes_s"));
  fmt::print("naive  {:8.2f} s  (a full quantize + evaluation per target)\n", naive_s);
  fmt::print("cpu    scan {:.2f} s, naive {:.2f} s\n", scan_cpu, naive_cpu);
  fmt::print("speed-up {:.2f}x wall, {:.2f}x cpu (target >= 5x)\n", naive_s / scan_s, naive_cpu / scan_cpu);
  fmt::print("largest score difference, relative to the top score: {:.2e} at {}\n", max_rel_diff, worst);
  return 0;
}
