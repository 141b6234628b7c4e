// TensorStatistics: streaming statistics of ONE activation tensor over all calibration batches:
// the absolute maximum of its finite values, how many finite values were seen, how many NaN/Inf
// values were skipped, and (optionally) a histogram of |x| that entropy and percentile search use.
//
// The histogram is exact and independent of batch size and batch order. Its range R is always
// the smallest power of two strictly greater than the running absmax, split into kNumBins
// equal bins, so bin width w = R / kNumBins is a power of two too and bin(|x|) = floor(|x| / w)
// is computed exactly. When a batch raises the absmax to R or beyond, R doubles (as often as
// needed) and bins merge 2:1; since floor(floor(v / w) / 2) == floor(v / 2w), the merged
// histogram equals the one built directly with the larger range. Because absmax >= R / 2, the
// data [0, absmax] always covers more than kNumBins / 2 = 2048 bins (the resolution TensorRT's
// entropy calibration uses). While the absmax is 0 there is no range yet and the only values
// seen are zeros, which fall in bin 0 at every range.
//
// Ownership: a value type that owns its bins. Not thread-safe; give each thread its own object
// and Merge() them (merging is exact and order-independent too).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace ptqkit::calib {

class TensorStatistics {
 public:
  static constexpr int kNumBins = 4096;
  static constexpr int kLog2NumBins = 12;

  // `name` is the activation tensor's name; it only appears in error messages.
  // with_histogram = false keeps only absmax and counts (all that max calibration needs).
  explicit TensorStatistics(std::string name = "", bool with_histogram = true);

  // Adds n values. NaN and +-Inf are skipped and counted. REQUIRES: data != nullptr or n == 0.
  void Add(const float* data, size_t n);

  // Adds everything `other` saw, as if its values had been Add()ed here.
  // REQUIRES: other.with_histogram() == with_histogram(); throws ptqkit::Error otherwise.
  void Merge(const TensorStatistics& other);

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  bool with_histogram() const { return with_histogram_; }
  // Largest finite |x| seen; 0 when none.
  float absmax() const { return absmax_; }
  uint64_t finite_count() const { return finite_count_; }
  uint64_t nan_count() const { return nan_count_; }
  uint64_t inf_count() const { return inf_count_; }
  uint64_t nonfinite_count() const { return nan_count_ + inf_count_; }
  // How many finite values were exactly +-0. They are also counted in histogram bin 0; the
  // searches take them out (any symmetric scale represents 0 exactly, so they carry no
  // quantization error and must not pull the KL search towards a tiny threshold).
  uint64_t zero_count() const { return zero_count_; }
  // The histogram with the exact zeros removed from bin 0.
  std::vector<uint64_t> HistogramWithoutZeros() const;

  // log2 of the histogram range R (R = 2^range_log2, bin width = 2^(range_log2 - 12)).
  // REQUIRES: absmax() > 0.
  int range_log2() const { return range_log2_; }
  // Bin width as a double (exact: a power of two). REQUIRES: absmax() > 0.
  double bin_width() const;
  // kNumBins counts of |x| (bin i holds [i*w, (i+1)*w)); empty without histogram.
  // When absmax() == 0, every finite value was 0 and sits in bin 0.
  const std::vector<uint64_t>& histogram() const { return bins_; }

  // Exact round trip: FromJson(ToJson(), name()) == *this. The name is not stored: callers keep
  // it as the key (see CalibrationTable).
  // Layout: {"amax", "finite_count", "zero_count", "nan_count", "inf_count",
  //          "histogram": {"range_log2", "num_bins", "runs": [[first_bin, count, count, ...], ...]}}
  // where each run lists the counts of consecutive non-empty bins. No "histogram" key means
  // with_histogram = false.
  nlohmann::json ToJson() const;
  // Throws ptqkit::Error naming `name` and the inconsistency (wrong types, counts that do not add
  // up, a range that does not fit the amax, ...).
  static TensorStatistics FromJson(const nlohmann::json& json, std::string name = "");

  // Same name, mode, counts, absmax and histogram.
  bool operator==(const TensorStatistics& other) const;

 private:
  // Sets absmax_ = new_absmax, raising the range (and merging bins) when needed.
  // REQUIRES: new_absmax > absmax_, finite.
  void GrowTo(float new_absmax);

  std::string name_;
  bool with_histogram_;
  float absmax_ = 0.0f;
  int range_log2_ = 0;  // 0 while absmax_ == 0 (no range yet).
  uint64_t finite_count_ = 0;
  uint64_t nan_count_ = 0;
  uint64_t inf_count_ = 0;
  uint64_t zero_count_ = 0;
  std::vector<uint64_t> bins_;
};

}  // namespace ptqkit::calib
