#include "sensitivity/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "ptqkit/error.h"

namespace ptqkit::sensitivity {
namespace {

// log(sum(exp(x - max))) + max over the flattened values: log-softmax without overflow.
double LogSumExp(const float* x, size_t n) {
  double max = -std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < n; ++i) max = std::max(max, static_cast<double>(x[i]));
  if (std::isinf(max)) return max;  // all -inf (or a +inf): the caller's result is not finite
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(x[i]) - max);
  return max + std::log(sum);
}

// True when the FP32 output already is (a set of) probabilities or a sigmoid map: every value in
// [0, 1] and not all zero. A softmax over such values is nearly uniform (exp of [0, 1] spans less
// than a factor e), so KL of softmaxes scores every probe about 0 and ranks nothing: measured on
// PP-OCR rec ([40, 6625] row-wise probabilities), every node of the scan scored about 0.
bool IsProbabilityLike(const float* ref, size_t n) {
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) {
    if (!(ref[i] >= 0.0f && ref[i] <= 1.0f)) return false;  // also false for NaN
    sum += ref[i];
  }
  return sum > 0.0;
}

// KL of the values normalised to sum 1. For R rows that each sum to 1 this is the mean of the
// rows' KL divergences; for a sigmoid map it weighs each pixel by its reference value. A small
// floor keeps a probe value of 0 (or a slightly negative one from a quantized output) finite.
double NormalisedKl(const float* ref, const float* probe, size_t n) {
  constexpr double kFloor = 1e-12;
  double ref_sum = 0.0, probe_sum = 0.0;
  for (size_t i = 0; i < n; ++i) {
    ref_sum += static_cast<double>(ref[i]) + kFloor;
    probe_sum += std::max(static_cast<double>(probe[i]), 0.0) + kFloor;
  }
  double kl = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const double p = (static_cast<double>(ref[i]) + kFloor) / ref_sum;
    const double q = (std::max(static_cast<double>(probe[i]), 0.0) + kFloor) / probe_sum;
    kl += p * std::log(p / q);
  }
  return std::isnan(kl) ? kl : std::max(kl, 0.0);
}

double KlDivergence(const float* ref, const float* probe, size_t n) {
  if (IsProbabilityLike(ref, n)) return NormalisedKl(ref, probe, n);
  const double ref_lse = LogSumExp(ref, n);
  const double probe_lse = LogSumExp(probe, n);
  double kl = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const double log_p = static_cast<double>(ref[i]) - ref_lse;
    const double p = std::exp(log_p);
    // p == 0 contributes 0 (the limit of p log p), even where log q is -inf.
    if (p == 0.0) continue;
    const double log_q = static_cast<double>(probe[i]) - probe_lse;
    kl += p * (log_p - log_q);
  }
  // KL >= 0 mathematically; rounding can leave a tiny negative for identical inputs.
  return std::isnan(kl) ? kl : std::max(kl, 0.0);
}

double MeanSquaredError(const float* ref, const float* probe, size_t n) {
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(ref[i]) - static_cast<double>(probe[i]);
    sum += d * d;
  }
  return sum / static_cast<double>(n);
}

double CosineDistance(const float* ref, const float* probe, size_t n) {
  double dot = 0.0, ref_sq = 0.0, probe_sq = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const double r = ref[i], p = probe[i];
    dot += r * p;
    ref_sq += r * r;
    probe_sq += p * p;
  }
  if (ref_sq == 0.0 && probe_sq == 0.0) return 0.0;  // identical (both zero)
  if (ref_sq == 0.0 || probe_sq == 0.0) return 1.0;  // no direction to compare: orthogonal
  const double cosine = dot / (std::sqrt(ref_sq) * std::sqrt(probe_sq));
  if (std::isnan(cosine)) return cosine;
  return 1.0 - std::clamp(cosine, -1.0, 1.0);
}

}  // namespace

Metric ParseMetric(std::string_view name) {
  if (name == "kl_div") return Metric::kKlDiv;
  if (name == "mse") return Metric::kMse;
  if (name == "cos") return Metric::kCos;
  throw Error(fmt::format("unknown metric '{}' (expected one of: kl_div, mse, cos)", name));
}

std::string MetricName(Metric metric) {
  switch (metric) {
    case Metric::kKlDiv:
      return "kl_div";
    case Metric::kMse:
      return "mse";
    case Metric::kCos:
      return "cos";
  }
  return "unknown";
}

double CompareSample(Metric metric, const float* ref, const float* probe, size_t n) {
  if (n == 0) return 0.0;
  switch (metric) {
    case Metric::kKlDiv:
      return KlDivergence(ref, probe, n);
    case Metric::kMse:
      return MeanSquaredError(ref, probe, n);
    case Metric::kCos:
      return CosineDistance(ref, probe, n);
  }
  return std::numeric_limits<double>::quiet_NaN();
}

ScoreAccumulator::ScoreAccumulator(Metric metric, size_t num_outputs)
    : metric_(metric), values_(num_outputs), has_(num_outputs), counts_(num_outputs, 0) {}

void ScoreAccumulator::Add(size_t output, int64_t sample, const float* ref, const float* probe,
                           size_t n) {
  AddValue(output, sample, CompareSample(metric_, ref, probe, n));
}

void ScoreAccumulator::AddValue(size_t output, int64_t sample, double value) {
  if (output >= values_.size() || sample < 0) {
    throw Error(fmt::format("score accumulator: output {} / sample {} out of range ({} output(s))",
                            output, sample, values_.size()),
                Error::Kind::kRuntime);
  }
  const auto index = static_cast<size_t>(sample);
  if (index >= values_[output].size()) {
    values_[output].resize(index + 1, 0.0);
    has_[output].resize(index + 1, false);
  }
  if (has_[output][index]) {
    throw Error(
        fmt::format("score accumulator: output {} of sample {} was compared twice", output, sample),
        Error::Kind::kRuntime);
  }
  values_[output][index] = value;
  has_[output][index] = true;
  ++counts_[output];
}

double ScoreAccumulator::Score() const {
  double total = 0.0;
  for (size_t output = 0; output < values_.size(); ++output) {
    double sum = 0.0;
    int64_t count = 0;
    for (size_t s = 0; s < values_[output].size(); ++s) {
      if (!has_[output][s]) continue;
      sum += values_[output][s];
      ++count;
    }
    if (count > 0) total += sum / static_cast<double>(count);
  }
  return total;
}

double ScoreAccumulator::StandardError() const {
  double total = 0.0;
  for (size_t output = 0; output < values_.size(); ++output) {
    double sum = 0.0, squares = 0.0;
    int64_t count = 0;
    for (size_t s = 0; s < values_[output].size(); ++s) {
      if (!has_[output][s]) continue;
      sum += values_[output][s];
      squares += values_[output][s] * values_[output][s];
      ++count;
    }
    if (count < 2) continue;
    const double n = static_cast<double>(count);
    const double variance = std::max(0.0, (squares - sum * sum / n) / (n - 1.0));
    total += std::sqrt(variance / n);
  }
  return total;
}

int64_t ScoreAccumulator::NumSamples(size_t output) const {
  return output < counts_.size() ? counts_[output] : 0;
}

}  // namespace ptqkit::sensitivity
