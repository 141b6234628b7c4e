// Time of the INT4 weight searches (awq_clip, awq_lite) on one weight the size of TinyLlama's
// MLP down projection (K 5632, N 2048), a benchmark, never a test:
//
//   build/bench/int4_search_speed [k=5632] [n=2048] [rows=384] [threads=2]
//
// The Gram is filled from `rows` random activation rows with a few loud channels (as LLM
// activations have). Prints the seconds of each search, the weight count per second, and a
// digest of the output so that two builds can be checked for the same choices.
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "quant/formats/blocked_weight_search.h"

using namespace ptqkit;
using Clock = std::chrono::steady_clock;

static double Seconds(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// FNV-1a over the packed values and the scales: equal digests mean the same quantized weight.
static uint64_t Digest(const BlockedWeight& q) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  };
  mix(q.packed.data(), q.packed.size());
  mix(q.scales.data(), q.scales.size() * sizeof(float));
  return h;
}

int main(int argc, char** argv) {
  const int64_t k = argc > 1 ? std::atoll(argv[1]) : 5632;
  const int64_t n = argc > 2 ? std::atoll(argv[2]) : 2048;
  const int64_t rows = argc > 3 ? std::atoll(argv[3]) : 384;
  const int threads = argc > 4 ? std::atoi(argv[4]) : 2;

  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> w(static_cast<size_t>(k * n));
  for (float& v : w) v = 0.02f * normal(rng);
  std::vector<float> x(static_cast<size_t>(rows * k));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < k; ++j) x[static_cast<size_t>(r * k + j)] = normal(rng) * (j % 97 == 0 ? 20.0f : 1.0f);
  }
  BlockGram gram(k, 128);
  auto t = Clock::now();
  gram.AddRows(x.data(), rows);
  fmt::print("gram      {:7.2f} s  ({} rows of K {})\n", Seconds(t), rows, k);

  BlockedWeightSearch o;
  o.threads = threads;
  for (bool lite : {false, true}) {
    o.awq_lite = lite;
    t = Clock::now();
    const BlockedWeight q = QuantizeBlockedWeight(w, {k, n}, 0, &gram, o);
    const double s = Seconds(t);
    fmt::print("{:9} {:7.2f} s  {:6.1f} M weights/s  alpha {:.2f}  clipped blocks {}  digest {:016x}\n",
               lite ? "awq_lite" : "awq_clip", s, static_cast<double>(k * n) / s / 1e6, q.awq_lite_alpha,
               q.clipped_blocks, Digest(q));
  }
  return 0;
}
