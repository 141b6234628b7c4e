#include "autotune/latency_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "autotune/gpu_probe.h"
#include "base/atomic_file.h"
#include "ptqkit/error.h"
#include "runtime/session.h"

namespace ptqkit::autotune {
namespace {

double NearestRank(const std::vector<double>& sorted, double q) {
  const size_t i = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size()))) ;
  return sorted[std::min(sorted.size() - 1, i == 0 ? 0 : i - 1)];
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string Serialize(const onnx::ModelProto& model) {
  std::string bytes;
  if (!model.SerializeToString(&bytes)) {
    throw Error("autotune: a candidate model could not be serialized (over 2 GiB?); it cannot be timed",
                Error::Kind::kUnsupported);
  }
  return bytes;
}

// ONNX Runtime on one provider, at its default (full) optimization level: the level a deployment
// runs, where Q/DQ pairs fuse into integer kernels — what the search is about.
class OrtBackend : public LatencyBackend {
 public:
  explicit OrtBackend(const BackendRequest& r) : request_(r) {
    runtime_.intra_op_threads = r.threads;
    if (r.backend == "ort_cuda") runtime_.execution_providers = {fmt::format("cuda:{}", r.cuda_device)};
    else if (r.backend == "ort_trt") runtime_.execution_providers = {"trt"};
    else runtime_.execution_providers = {"cpu"};
  }
  std::string name() const override { return request_.backend; }

  LatencySummary Measure(const onnx::ModelProto& model) override {
    InferenceSession session(Serialize(model), runtime_);
    // ONNX Runtime falls back to the CPU for a provider it cannot load; a GPU timing that ran on
    // the CPU would be a wrong answer, not a slower one.
    if (request_.backend != "ort_cpu" && session.providers().front() == "cpu") {
      throw Error(fmt::format("no GPU / TensorRT found: ONNX Runtime could not start the provider of the {} latency "
                              "backend (see the warning above); refusing to time on the CPU instead",
                              request_.backend),
                  Error::Kind::kRuntime);
    }
    const auto& outputs = session.output_names();
    const auto sink = [](const std::vector<OutputView>&) {};
    for (int i = 0; i < request_.warmup_runs; ++i) session.RunBatch(request_.feeds, outputs, sink);
    std::vector<double> times;
    for (int i = 0; i < request_.timing_runs; ++i) {
      const auto start = std::chrono::steady_clock::now();
      session.RunBatch(request_.feeds, outputs, sink);
      times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    return Summarize(std::move(times));
  }

 private:
  BackendRequest request_;
  RuntimeOptions runtime_;
};

// The number after `key` in trtexec's "GPU Compute Time: min = .. ms, ..., median = .. ms, ..." line.
double ReportValue(const std::string& line, const std::string& key) {
  const size_t at = line.find(key);
  if (at == std::string::npos) {
    throw Error(fmt::format("trtexec's 'GPU Compute Time' line has no '{}': {}", key, line), Error::Kind::kRuntime);
  }
  return std::strtod(line.c_str() + at + key.size(), nullptr);
}

// TensorRT through trtexec: builds an engine from the candidate file and times it on the GPU.
// trtexec's own statistics are read back (median, percentiles) from its report.
class TrtexecBackend : public LatencyBackend {
 public:
  TrtexecBackend(const BackendRequest& r, std::string trtexec) : request_(r), trtexec_(std::move(trtexec)) {}
  std::string name() const override { return "tensorrt"; }

  LatencySummary Measure(const onnx::ModelProto& model) override {
    namespace fs = std::filesystem;
    const std::string path = (fs::path(request_.work_dir) / "candidate.onnx").string();
    WriteFileAtomically(path, Serialize(model));
    // Strongly typed: the Q/DQ nodes decide what runs in INT8/FP8, everything else keeps its type.
    std::string cmd = fmt::format("'{}' --onnx='{}' --stronglyTyped --iterations={} --warmUp={} --duration=0 "
                                  "--percentile=10,90",
                                  trtexec_, path, std::max(1, request_.timing_runs), 10 * request_.warmup_runs);
    if (!request_.timing_cache.empty()) cmd += fmt::format(" --timingCacheFile='{}'", request_.timing_cache);
    if (!request_.trtexec_args.empty()) cmd += " " + request_.trtexec_args;
    cmd += " 2>&1";
    std::string out;
    if (FILE* pipe = ::popen(cmd.c_str(), "r")) {
      std::array<char, 4096> buf;
      size_t n;
      while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
      if (::pclose(pipe) != 0) {
        throw Error(fmt::format("trtexec failed on a candidate ({}): {}", cmd, out.substr(out.size() > 600 ? out.size() - 600 : 0)),
                    Error::Kind::kRuntime);
      }
    }
    const size_t at = out.find("GPU Compute Time:");
    if (at == std::string::npos) {
      throw Error("trtexec's report has no 'GPU Compute Time' line", Error::Kind::kRuntime);
    }
    const std::string line = out.substr(at, out.find('\n', at) - at);
    LatencySummary s;
    s.median_ms = ReportValue(line, "median = ");
    s.p10_ms = ReportValue(line, "percentile(10%) = ");
    s.p90_ms = ReportValue(line, "percentile(90%) = ");
    s.mad_ms = 0.5 * (s.p90_ms - s.p10_ms) / 1.28;  // the MAD of a normal spread with these percentiles
    s.runs = request_.timing_runs;
    return s;
  }

 private:
  BackendRequest request_;
  std::string trtexec_;
};

}  // namespace

LatencySummary Summarize(std::vector<double> times_ms) {
  if (times_ms.empty()) throw Error("autotune: no timed runs to summarize (--autotune_timing_runs must be >= 1)");
  std::sort(times_ms.begin(), times_ms.end());
  LatencySummary s;
  s.runs = static_cast<int>(times_ms.size());
  s.median_ms = Median(times_ms);
  s.p10_ms = NearestRank(times_ms, 0.10);
  s.p90_ms = NearestRank(times_ms, 0.90);
  std::vector<double> deviations;
  for (double t : times_ms) deviations.push_back(std::fabs(t - s.median_ms));
  s.mad_ms = Median(deviations);
  return s;
}

std::unique_ptr<LatencyBackend> MakeLatencyBackend(const BackendRequest& r) {
  if (r.backend == "ort_cpu") return std::make_unique<OrtBackend>(r);
  if (r.backend != "ort_cuda" && r.backend != "ort_trt" && r.backend != "tensorrt") {
    throw Error(fmt::format("unknown --autotune_backend '{}' (expected ort_cpu, ort_cuda, ort_trt or tensorrt)",
                            r.backend));
  }
  const GpuProbe probe = ProbeGpu();
  const std::string missing = MissingForBackend(probe, r.backend);
  if (!missing.empty()) throw Error(missing, Error::Kind::kUnsupported);
  if (r.backend == "tensorrt") return std::make_unique<TrtexecBackend>(r, probe.trtexec);
  return std::make_unique<OrtBackend>(r);
}

}  // namespace ptqkit::autotune
