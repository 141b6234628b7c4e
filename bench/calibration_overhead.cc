// Calibration overhead against ONNX Runtime alone, in one process with the same ONNX Runtime
// library, model, data, batches and thread count (a benchmark, never a test).
//
//   build/bench/calibration_overhead MODEL.onnx DATA.npy [batch=8] [threads=0] [repeats=2]
//
// Measures, each `repeats` times (best kept, runs interleaved so machine noise hits all alike):
//   ort    FP32 forward passes over every batch, reading the model's own outputs;
//   max    ptqkit's streaming capture with absmax collectors (quantize --calibration_method max);
//   entropy the same with histograms, plus the KL search for every tensor.
// and prints each time with its ratio to `ort` (targets: max <= 1.3x, entropy <= 1.6x).
// bench/bench_calibration.py writes a ResNet-18 model and data (--workdir) for it.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <limits>

#include "calib/scale_search.h"
#include "onnx/graph_index.h"
#include "pipeline/activation_capture.h"
#include "pipeline/prepared_model.h"
#include "quant/placement.h"
#include "runtime/session.h"

using namespace ptqkit;
using Clock = std::chrono::steady_clock;

static double Seconds(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

int main(int argc, char** argv) {
  if (argc < 3) {
    fmt::print(stderr, "usage: {} MODEL.onnx DATA.npy [batch=8] [threads=0] [repeats=2]\n", argv[0]);
    return 2;
  }
  const int64_t batch = argc > 3 ? std::atoll(argv[3]) : 8;
  const int threads = argc > 4 ? std::atoi(argv[4]) : 0;
  const int repeats = argc > 5 ? std::atoi(argv[5]) : 2;

  PreparedModel model = LoadPreparedModel(argv[1]);
  DataRequest request;
  request.path = argv[2];
  request.batch_size = batch;
  CalibrationData data = OpenCalibrationData(model, request);
  GraphIndex index(model.proto.graph());
  const Placement plan = PlanPlacement(index, {});
  const RuntimeOptions runtime{{"cpu"}, {}, threads};
  std::string bytes;
  model.proto.SerializeToString(&bytes);

  double best_ort = std::numeric_limits<double>::max(), best_max = best_ort, best_entropy = best_ort;
  for (int r = 0; r < repeats; ++r) {
    {
      InferenceSession session(bytes, runtime);
      const auto t = Clock::now();
      for (int64_t b = 0; b < data.num_batches; ++b) {
        session.Run(data.set.ReadBatch(b, batch), session.output_names(), [](const OutputView&) {});
      }
      best_ort = std::min(best_ort, Seconds(t));
    }
    for (bool histograms : {false, true}) {
      CaptureRequest capture;
      capture.tensors = plan.ActivationTensors();
      capture.histograms = histograms;
      capture.batch_size = batch;
      capture.num_batches = data.num_batches;
      const auto t = Clock::now();
      // Session creation is inside the timed region here, as it is in `quantize`; the ORT-alone
      // run above excludes it, which only makes the ratio stricter.
      CaptureResult result = CaptureStatistics(model.proto, data.set, capture, runtime);
      if (histograms) {
        for (const auto& [name, stats] : result.table.tensors) calib::ComputeAmax(stats, calib::Method::kEntropy);
      }
      (histograms ? best_entropy : best_max) = std::min(histograms ? best_entropy : best_max, Seconds(t));
    }
  }
  fmt::print("{}: {} samples, batch {}, {} activation tensors captured\n", argv[1], data.set.num_samples(), batch,
             plan.ActivationTensors().size());
  fmt::print("ORT alone        {:8.3f} s\n", best_ort);
  fmt::print("calib max        {:8.3f} s  {:5.2f}x  (target <= 1.3x)\n", best_max, best_max / best_ort);
  fmt::print("calib entropy    {:8.3f} s  {:5.2f}x  (target <= 1.6x)\n", best_entropy, best_entropy / best_ort);
  return 0;
}
