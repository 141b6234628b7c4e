// Calibration overhead against ONNX Runtime alone, in one process with the same ONNX Runtime
// library, model, data, batches and thread count (a benchmark, never a test).
//
//   build/bench/calibration_overhead MODEL.onnx DATA.npy [batch=8] [threads=0] [repeats=2]
//
// Measures, each `repeats` times (best kept, runs interleaved so machine noise hits all alike):
//   ort    session creation + FP32 forward passes over every batch, reading the model's outputs;
//   max    ptqkit's streaming capture with absmax collectors (quantize --calibration_method max);
//   entropy the same with histograms, plus the KL search for every tensor.
// and prints each time with its ratio to `ort` (targets: max <= 1.3x, entropy <= 1.6x).
// bench/bench_calibration.py writes a ResNet-18 model and data (--workdir) for it.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdlib>
#include <limits>

#include "calib/scale_search.h"
#include "onnx/graph_index.h"
#include "onnx/model_io.h"
#include "runtime/activation_capture.h"
#include "runtime/prepared_model.h"
#include "quant/placement/placement.h"
#include "runtime/session.h"

using namespace ptqkit;
using Clock = std::chrono::steady_clock;

static double Seconds(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
// Process CPU seconds: with one intra-op thread this is the work done, robust to a busy machine.
static double CpuSeconds() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

struct Best {
  double wall = std::numeric_limits<double>::max();
  double cpu = std::numeric_limits<double>::max();
  void Keep(double w, double c) {
    wall = std::min(wall, w);
    cpu = std::min(cpu, c);
  }
};

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

  Best ort, exposed, max, entropy;
  // The capture model alone: graph outputs = the observed tensors, no statistics. Separates what
  // ONNX Runtime charges for exposing intermediates from what the collectors cost.
  const std::string capture_bytes = onnxio::MakeSessionModel(model.proto, plan.ActivationTensors(), SIZE_MAX).graph_bytes;
  for (int r = 0; r < repeats; ++r) {
    {
      const auto t = Clock::now();
      const double c = CpuSeconds();
      InferenceSession session(bytes, runtime);
      for (int64_t b = 0; b < data.num_batches; ++b) {
        session.Run(data.set.ReadBatch(b, batch), session.output_names(), [](const OutputView&) {});
      }
      ort.Keep(Seconds(t), CpuSeconds() - c);
    }
    {
      const auto t = Clock::now();
      const double c = CpuSeconds();
      InferenceSession session(capture_bytes, runtime);
      std::vector<std::string> outputs = session.output_names();
      outputs.erase(std::remove(outputs.begin(), outputs.end(), model.inputs[0].name), outputs.end());
      for (int64_t b = 0; b < data.num_batches; ++b) {
        session.Run(data.set.ReadBatch(b, batch), outputs, [](const OutputView&) {});
      }
      exposed.Keep(Seconds(t), CpuSeconds() - c);
    }
    for (bool histograms : {false, true}) {
      CaptureRequest capture;
      capture.tensors = plan.ActivationTensors();
      capture.histograms = histograms;
      capture.batch_size = batch;
      capture.num_batches = data.num_batches;
      const auto t = Clock::now();
      const double c = CpuSeconds();
      // Both timed regions include creating the session from the serialized model.
      CaptureResult result = CaptureStatistics(model.proto, data.set, capture, runtime);
      if (histograms) {
        for (const auto& [name, stats] : result.table.tensors) calib::ComputeAmax(stats, calib::Method::kEntropy);
      }
      (histograms ? entropy : max).Keep(Seconds(t), CpuSeconds() - c);
    }
  }
  fmt::print("{}: {} samples, batch {}, {} activation tensors captured\n", argv[1], data.set.num_samples(), batch,
             plan.ActivationTensors().size());
  fmt::print("                 wall (s)  ratio   cpu (s)  ratio\n");
  fmt::print("ORT alone        {:8.3f}          {:8.3f}\n", ort.wall, ort.cpu);
  fmt::print("ORT + exposed    {:8.3f}  {:5.2f}x  {:8.3f}  {:5.2f}x  (intermediates as outputs, no statistics)\n",
             exposed.wall, exposed.wall / ort.wall, exposed.cpu, exposed.cpu / ort.cpu);
  fmt::print("calib max        {:8.3f}  {:5.2f}x  {:8.3f}  {:5.2f}x  (target <= 1.3x)\n", max.wall, max.wall / ort.wall,
             max.cpu, max.cpu / ort.cpu);
  fmt::print("calib entropy    {:8.3f}  {:5.2f}x  {:8.3f}  {:5.2f}x  (target <= 1.6x)\n", entropy.wall,
             entropy.wall / ort.wall, entropy.cpu, entropy.cpu / ort.cpu);
  return 0;
}
