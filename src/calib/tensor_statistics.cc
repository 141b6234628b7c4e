#include "calib/tensor_statistics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>
#include <nlohmann/json.hpp>

#include "ptqkit/error.h"

namespace ptqkit::calib {
namespace {

constexpr uint32_t kAbsMask = 0x7fffffffu;
constexpr uint32_t kInfBits = 0x7f800000u;

inline uint32_t AbsBits(const float* p) {
  uint32_t u;
  std::memcpy(&u, p, sizeof(u));
  return u & kAbsMask;
}

// log2 of the smallest power of two strictly greater than v. REQUIRES: v finite, v > 0.
int RangeLog2For(float v) {
  int exponent;
  std::frexp(v, &exponent);  // v = f * 2^exponent with f in [0.5, 1), subnormals included.
  return exponent;
}

// Bin of |v| for a range of 2^range_log2. Scaling by a power of two in double is exact for
// every float (no overflow or underflow in double's range), so the truncation is an exact floor.
inline size_t BinOf(float v, double inv_width) {
  return static_cast<size_t>(std::fabs(static_cast<double>(v)) * inv_width);
}

// Below this size the sub-histograms' clearing and merging cost more than they save.
constexpr size_t kInterleavedMinSize = 16384;

// Binning of finite values into four sub-histograms in turn. Activations after a ReLU are half
// zeros: with one histogram every increment of bin 0 waits for the previous one (a store-to-load
// chain); four independent counters break the chain. |x| * inv_width is exact in float too (a
// power-of-two scale of a value below 2^range), so the bins equal BinOf's.
// REQUIRES: every value finite with |x| < 2^range; inv_width a power of two representable in float.
void BinInterleaved(const float* data, size_t n, float inv_width, uint64_t* bins) {
  constexpr size_t kWays = 4;
  constexpr size_t kChunk = size_t{1} << 30;  // keeps the 32-bit sub-counts from overflowing
  std::vector<uint32_t> sub(kWays * TensorStatistics::kNumBins);
  for (size_t start = 0; start < n; start += kChunk) {
    const size_t end = std::min(n, start + kChunk);
    std::fill(sub.begin(), sub.end(), 0u);
    uint32_t* s0 = sub.data();
    uint32_t* s1 = s0 + TensorStatistics::kNumBins;
    uint32_t* s2 = s1 + TensorStatistics::kNumBins;
    uint32_t* s3 = s2 + TensorStatistics::kNumBins;
    size_t i = start;
    for (; i + kWays <= end; i += kWays) {
      ++s0[static_cast<uint32_t>(std::fabs(data[i]) * inv_width)];
      ++s1[static_cast<uint32_t>(std::fabs(data[i + 1]) * inv_width)];
      ++s2[static_cast<uint32_t>(std::fabs(data[i + 2]) * inv_width)];
      ++s3[static_cast<uint32_t>(std::fabs(data[i + 3]) * inv_width)];
    }
    for (; i < end; ++i) ++s0[static_cast<uint32_t>(std::fabs(data[i]) * inv_width)];
    for (size_t b = 0; b < TensorStatistics::kNumBins; ++b) {
      bins[b] += uint64_t{s0[b]} + s1[b] + s2[b] + s3[b];
    }
  }
}

}  // namespace

TensorStatistics::TensorStatistics(std::string name, bool with_histogram)
    : name_(std::move(name)), with_histogram_(with_histogram) {
  if (with_histogram_) bins_.assign(kNumBins, 0);
}

double TensorStatistics::bin_width() const {
  return std::ldexp(1.0, range_log2_ - kLog2NumBins);
}

void TensorStatistics::GrowTo(float new_absmax) {
  const int new_log2 = RangeLog2For(new_absmax);
  if (absmax_ == 0.0f) {
    // Only zeros so far: they stay in bin 0 whatever the range.
    range_log2_ = new_log2;
  } else if (new_log2 > range_log2_) {
    const int shift = std::min(new_log2 - range_log2_, kLog2NumBins);
    // Merging 2^shift : 1 in place: the target j >> shift never exceeds j, and every target
    // below j has already been cleared and refilled.
    for (size_t j = 0; j < bins_.size(); ++j) {
      const uint64_t count = bins_[j];
      bins_[j] = 0;
      bins_[j >> shift] += count;
    }
    range_log2_ = new_log2;
  }
  absmax_ = new_absmax;
}

void TensorStatistics::Add(const float* data, size_t n) {
  if (n == 0) return;
  // Pass 1: absmax of the finite values and the number of non-finite ones. On the bit patterns
  // with the sign cleared, float order is unsigned order and "finite" is "below Inf's pattern".
  // The common case, all finite, is one max over the bit patterns, which GCC vectorises; only
  // when that max is Inf/NaN's pattern does a second, scalar pass separate the two.
  uint32_t max_bits = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t u = AbsBits(data + i);
    max_bits = max_bits > u ? max_bits : u;
  }
  size_t nonfinite = 0;
  if (max_bits >= kInfBits) {
    max_bits = 0;
    for (size_t i = 0; i < n; ++i) {
      const uint32_t u = AbsBits(data + i);
      if (u < kInfBits) max_bits = std::max(max_bits, u);
      else ++nonfinite;
    }
  }
  if (nonfinite != 0) {
    size_t nans = 0;
    for (size_t i = 0; i < n; ++i) nans += AbsBits(data + i) > kInfBits;
    nan_count_ += nans;
    inf_count_ += nonfinite - nans;
  }
  const size_t finite = n - nonfinite;
  finite_count_ += finite;
  // Exact zeros (+0 and -0): a vectorisable count over the sign-cleared bit patterns.
  size_t zeros = 0;
  for (size_t i = 0; i < n; ++i) zeros += AbsBits(data + i) == 0u;
  zero_count_ += zeros;
  float batch_absmax;
  std::memcpy(&batch_absmax, &max_bits, sizeof(batch_absmax));
  if (batch_absmax > absmax_) GrowTo(batch_absmax);
  if (!with_histogram_ || finite == 0) return;

  // Pass 2: binning. Every |x| is <= absmax_ < 2^range_log2_, so every index is < kNumBins.
  uint64_t* bins = bins_.data();
  if (absmax_ == 0.0f) {
    bins[0] += finite;
    return;
  }
  const double inv_width = std::ldexp(1.0, kLog2NumBins - range_log2_);
  if (nonfinite == 0 && n >= kInterleavedMinSize && kLog2NumBins - range_log2_ <= 127) {
    BinInterleaved(data, n, static_cast<float>(inv_width), bins);
  } else if (nonfinite == 0) {
    for (size_t i = 0; i < n; ++i) ++bins[BinOf(data[i], inv_width)];
  } else {
    for (size_t i = 0; i < n; ++i) {
      if (AbsBits(data + i) < kInfBits) ++bins[BinOf(data[i], inv_width)];
    }
  }
}

void TensorStatistics::Merge(const TensorStatistics& other) {
  if (other.with_histogram_ != with_histogram_) {
    throw Error(fmt::format(
        "cannot merge statistics of tensor '{}' collected {} a histogram with statistics of "
        "tensor '{}' collected {} one",
        name_, with_histogram_ ? "with" : "without", other.name_,
        other.with_histogram_ ? "with" : "without"));
  }
  finite_count_ += other.finite_count_;
  zero_count_ += other.zero_count_;
  nan_count_ += other.nan_count_;
  inf_count_ += other.inf_count_;
  if (other.absmax_ > absmax_) GrowTo(other.absmax_);
  if (!with_histogram_) return;
  // Other's zeros-only histogram (absmax 0) uses bin 0 alone, which maps to bin 0 here.
  const int shift =
      other.absmax_ == 0.0f ? 0 : std::min(range_log2_ - other.range_log2_, kLog2NumBins);
  for (size_t j = 0; j < other.bins_.size(); ++j) bins_[j >> shift] += other.bins_[j];
}

bool TensorStatistics::operator==(const TensorStatistics& other) const {
  return name_ == other.name_ && with_histogram_ == other.with_histogram_ &&
         absmax_ == other.absmax_ && range_log2_ == other.range_log2_ &&
         finite_count_ == other.finite_count_ && nan_count_ == other.nan_count_ &&
         inf_count_ == other.inf_count_ && zero_count_ == other.zero_count_ &&
         bins_ == other.bins_;
}

std::vector<uint64_t> TensorStatistics::HistogramWithoutZeros() const {
  std::vector<uint64_t> bins = bins_;
  if (!bins.empty()) bins[0] -= std::min(bins[0], zero_count_);
  return bins;
}

nlohmann::json TensorStatistics::ToJson() const {
  nlohmann::json json = {
      {"amax", absmax_},
      {"finite_count", finite_count_},
      {"zero_count", zero_count_},
      {"nan_count", nan_count_},
      {"inf_count", inf_count_},
  };
  if (with_histogram_) {
    nlohmann::json runs = nlohmann::json::array();
    size_t j = 0;
    while (j < bins_.size()) {
      if (bins_[j] == 0) {
        ++j;
        continue;
      }
      nlohmann::json run = nlohmann::json::array({j});
      while (j < bins_.size() && bins_[j] != 0) run.push_back(bins_[j++]);
      runs.push_back(std::move(run));
    }
    json["histogram"] = {{"range_log2", range_log2_}, {"num_bins", kNumBins}, {"runs", runs}};
  }
  return json;
}

namespace {

[[noreturn]] void Bad(const std::string& name, const std::string& what) {
  throw Error(fmt::format("calibration statistics of tensor '{}': {}", name, what));
}

// Parsed JSON holds non-negative integers as unsigned; JSON built in code may hold them signed.
bool IsCount(const nlohmann::json& value) {
  return value.is_number_unsigned() || (value.is_number_integer() && value.get<int64_t>() >= 0);
}

uint64_t GetCount(const nlohmann::json& json, const char* key, const std::string& name) {
  if (!json.contains(key)) Bad(name, fmt::format("missing \"{}\"", key));
  const nlohmann::json& value = json.at(key);
  if (!IsCount(value)) {
    Bad(name, fmt::format("\"{}\" must be a non-negative integer, got {}", key, value.dump()));
  }
  return value.get<uint64_t>();
}

}  // namespace

TensorStatistics TensorStatistics::FromJson(const nlohmann::json& json, std::string name) {
  if (!json.is_object()) Bad(name, "expected a JSON object, got " + json.dump());
  if (!json.contains("amax") || !json.at("amax").is_number()) {
    Bad(name, "missing or non-numeric \"amax\"");
  }
  const double amax = json.at("amax").get<double>();
  if (!std::isfinite(amax) || amax < 0.0 || static_cast<double>(static_cast<float>(amax)) != amax) {
    Bad(name, fmt::format("\"amax\" must be a finite, non-negative float32 value, got {}", amax));
  }
  TensorStatistics stats(std::move(name), json.contains("histogram"));
  stats.finite_count_ = GetCount(json, "finite_count", stats.name_);
  stats.zero_count_ = GetCount(json, "zero_count", stats.name_);
  if (stats.zero_count_ > stats.finite_count_) Bad(stats.name_, "\"zero_count\" > finite_count");
  stats.nan_count_ = GetCount(json, "nan_count", stats.name_);
  stats.inf_count_ = GetCount(json, "inf_count", stats.name_);
  stats.absmax_ = static_cast<float>(amax);
  if (amax > 0.0) stats.range_log2_ = RangeLog2For(stats.absmax_);
  if (amax > 0.0 && stats.finite_count_ == 0) Bad(stats.name_, "\"amax\" > 0 but finite_count 0");
  if (!stats.with_histogram_) return stats;

  const nlohmann::json& hist = json.at("histogram");
  if (!hist.is_object() || !hist.contains("runs") || !hist.at("runs").is_array()) {
    Bad(stats.name_, "\"histogram\" must be an object with a \"runs\" array");
  }
  if (!hist.contains("num_bins") || hist.at("num_bins") != kNumBins) {
    Bad(stats.name_, fmt::format("\"histogram.num_bins\" must be {}", kNumBins));
  }
  if (!hist.contains("range_log2") || !hist.at("range_log2").is_number_integer() ||
      hist.at("range_log2").get<int64_t>() != stats.range_log2_) {
    Bad(stats.name_, fmt::format("\"histogram.range_log2\" must be {} for amax {}",
                                 stats.range_log2_, amax));
  }
  uint64_t total = 0;
  size_t next_free = 0;  // Runs must be sorted and disjoint.
  for (const nlohmann::json& run : hist.at("runs")) {
    if (!run.is_array() || run.size() < 2) {
      Bad(stats.name_, "each histogram run must be [first_bin, count, ...], got " + run.dump());
    }
    if (!IsCount(run[0]) || run[0].get<uint64_t>() < next_free ||
        run[0].get<uint64_t>() + (run.size() - 1) > static_cast<uint64_t>(kNumBins)) {
      Bad(stats.name_, "histogram run out of order or out of range: " + run.dump());
    }
    size_t j = run[0].get<size_t>();
    for (size_t k = 1; k < run.size(); ++k, ++j) {
      if (!IsCount(run[k])) Bad(stats.name_, "bad histogram count in " + run.dump());
      const uint64_t count = run[k].get<uint64_t>();
      if (total + count < total) Bad(stats.name_, "histogram counts overflow");
      total += count;
      stats.bins_[j] = count;
    }
    next_free = j;
  }
  if (total != stats.finite_count_) {
    Bad(stats.name_, fmt::format("histogram counts add up to {}, but finite_count is {}", total,
                                 stats.finite_count_));
  }
  if (stats.zero_count_ > stats.bins_[0]) {
    Bad(stats.name_, fmt::format("zero_count {} exceeds histogram bin 0 ({})", stats.zero_count_,
                                 stats.bins_[0]));
  }
  if (stats.finite_count_ > 0) {
    const auto last = static_cast<size_t>(
        std::find_if(stats.bins_.rbegin(), stats.bins_.rend(), [](uint64_t c) { return c != 0; }) -
        stats.bins_.rbegin());
    const size_t last_bin = stats.bins_.size() - 1 - last;
    const size_t amax_bin =
        amax == 0.0 ? 0 : BinOf(stats.absmax_, std::ldexp(1.0, kLog2NumBins - stats.range_log2_));
    if (last_bin != amax_bin) {
      Bad(stats.name_, fmt::format("last non-empty histogram bin is {}, but amax {} is in bin {}",
                                   last_bin, amax, amax_bin));
    }
  }
  return stats;
}

}  // namespace ptqkit::calib
