// Metrics of the sensitivity scan: how far one probe's graph output is from the FP32 reference
// output, for one sample. Both outputs are flattened and compared in float64:
//   kl_div  KL(softmax(ref) || softmax(probe)), each softmax over the whole flattened output;
//           where every ref value is in [0, 1] (probabilities, a sigmoid map) and not all are 0,
//           KL(ref / sum(ref) || probe / sum(probe)) instead: those values are already a
//           distribution, and a softmax over them would be nearly uniform whatever the probe;
//   mse     mean of (ref - probe)^2;
//   cos     1 - cosine similarity; 1 when exactly one of the two is the zero vector, 0 when both
//   are.
// Every metric is >= 0 and 0 for identical outputs; higher means the probe changed more.
// A non-finite value in either input gives a non-finite (or meaningless) result: the caller
// checks std::isfinite on the score and reports the probe as failed.
//
// ScoreAccumulator turns per-sample comparisons into one target's score: mean over samples per
// graph output, then summed over outputs (DESIGN.md). Values are kept per (output, sample) and
// summed in sample order when asked, so the score does not depend on the order in which batches
// finished. Pure functions are thread-safe; a ScoreAccumulator is not (one per probe).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ptqkit::sensitivity {

enum class Metric { kKlDiv, kMse, kCos };

// REQUIRES: name is kl_div, mse or cos. Throws ptqkit::Error listing the valid names otherwise.
Metric ParseMetric(std::string_view name);
// The name ParseMetric accepts ("kl_div", "mse", "cos").
std::string MetricName(Metric metric);

// One sample of one output. n == 0 gives 0. REQUIRES: ref and probe point at n floats each.
double CompareSample(Metric metric, const float* ref, const float* probe, size_t n);

class ScoreAccumulator {
 public:
  ScoreAccumulator(Metric metric, size_t num_outputs);

  // Compares output `output` of sample `sample`. REQUIRES: output < num_outputs; each
  // (output, sample) pair is added once (a second add throws ptqkit::Error, kRuntime).
  void Add(size_t output, int64_t sample, const float* ref, const float* probe, size_t n);
  // The same with the comparison already computed (for callers that compare elsewhere).
  void AddValue(size_t output, int64_t sample, double value);

  // Sum over outputs of (mean over that output's samples). An output with no samples adds 0.
  double Score() const;
  // Samples added for `output`.
  int64_t NumSamples(size_t output) const;
  // Standard error of Score(): the sum over outputs of each output mean's standard error (an upper
  // bound whatever the correlation between outputs). 0 with fewer than 2 samples of every output.
  double StandardError() const;
  Metric metric() const { return metric_; }

 private:
  Metric metric_;
  // values_[output][sample]; has_[output][sample] says whether it was added (samples may arrive
  // out of order, and a gap must not count as a zero).
  std::vector<std::vector<double>> values_;
  std::vector<std::vector<bool>> has_;
  std::vector<int64_t> counts_;  // per output: samples added (NumSamples is on the scan's per-batch path)
};

}  // namespace ptqkit::sensitivity
