#include "autotune/node_profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <vector>
#include <nlohmann/json.hpp>

#include "base/input_file.h"
#include "ptqkit/error.h"
#include "runtime/session.h"

namespace ptqkit::autotune {

std::map<std::string, double> ParseNodeTimes(const std::string& trace_json) {
  const nlohmann::json trace = nlohmann::json::parse(trace_json, nullptr, /*allow_exceptions=*/false);
  if (!trace.is_array()) throw Error("ONNX Runtime's profile is not a JSON array of events", Error::Kind::kRuntime);
  static const std::string kSuffix = "_kernel_time";
  std::map<std::string, std::vector<double>> runs;
  for (const auto& e : trace) {
    if (!e.is_object() || e.value("cat", "") != "Node" || !e.contains("dur")) continue;
    const std::string name = e.value("name", "");
    if (name.size() <= kSuffix.size() || name.compare(name.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0) {
      continue;
    }
    runs[name.substr(0, name.size() - kSuffix.size())].push_back(e.at("dur").get<double>() / 1000.0);
  }
  // The median over the runs: the first run's allocations and first touches land on the first
  // nodes and would inflate their share.
  std::map<std::string, double> ms;
  for (auto& [node, t] : runs) {
    std::sort(t.begin(), t.end());
    const size_t n = t.size();
    ms[node] = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
  }
  return ms;
}

std::map<std::string, double> ProfileNodeTimes(const onnx::ModelProto& model, const Batch& feeds, int runs, int threads,
                                               const std::string& work_dir) {
  std::string bytes;
  if (!model.SerializeToString(&bytes)) throw Error("autotune: the model cannot be serialized for profiling");
  std::map<std::string, double> times;
  std::string trace_path;
  {
    RuntimeOptions options;
    options.intra_op_threads = threads;
    options.basic_optimizations_only = true;
    options.profile_file_prefix = (std::filesystem::path(work_dir) / "ptqkit_profile").string();
    InferenceSession session(bytes, options);
    const auto sink = [](const std::vector<OutputView>&) {};
    // The first run (allocations, first touch) is profiled too; it is one run in runs + 1.
    for (int i = 0; i <= runs; ++i) session.RunBatch(feeds, session.output_names(), sink);
    trace_path = session.EndProfiling();
    times = ParseNodeTimes(ReadWholeInputFile(trace_path, "ONNX Runtime profile"));
  }
  std::error_code ec;
  std::filesystem::remove(trace_path, ec);
  return times;
}

}  // namespace ptqkit::autotune
