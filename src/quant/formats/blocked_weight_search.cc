// INT4 weight-only, step 2 (blocked_weight_search.h): Grams, AWQ-lite scaling and the per-block clip search.
#include "quant/formats/blocked_weight_search.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <thread>

#include "base/log.h"
#include "onnx/float16.h"
#include "ptqkit/error.h"
#include "quant/formats/numerics.h"

namespace ptqkit {
BlockGram::BlockGram(int64_t k, int64_t block)
    : k_(k),
      block_(block),
      data_(static_cast<size_t>(((k + block - 1) / block) * block * block), 0.0),
      abs_sum_(static_cast<size_t>(k), 0.0),
      row_(static_cast<size_t>(k)) {}

void BlockGram::AddRows(const float* x, int64_t rows) {
  const int64_t nb = num_blocks();
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = x + r * k_;
    for (int64_t j = 0; j < k_; ++j) {
      row_[j] = std::isfinite(in[j]) ? static_cast<double>(in[j]) : 0.0;
      abs_sum_[j] += std::fabs(row_[j]);
    }
    for (int64_t b = 0; b < nb; ++b) {
      const int64_t len = std::min(block_, k_ - b * block_);
      const double* xb = row_.data() + b * block_;
      double* g = data_.data() + b * block_ * block_;
      for (int64_t i = 0; i < len; ++i) {
        const double xi = xb[i];
        if (xi == 0.0) continue;  // ReLU/GELU outputs are often exactly 0.
        double* gi = g + i * block_;
        for (int64_t j = i; j < len; ++j) gi[j] += xi * xb[j];
      }
    }
  }
  rows_ += rows;
}

void BlockGram::Merge(const BlockGram& other) {
  if (other.k_ != k_ || other.block_ != block_) {
    throw Error(fmt::format("internal: merging Gram matrices of K {} block {} and K {} block {}", k_, block_, other.k_,
                            other.block_));
  }
  for (size_t i = 0; i < data_.size(); ++i) data_[i] += other.data_[i];
  for (size_t i = 0; i < abs_sum_.size(); ++i) abs_sum_[i] += other.abs_sum_[i];
  rows_ += other.rows_;
}

std::vector<double> BlockGram::MeanAbs() const {
  std::vector<double> m(abs_sum_.size(), 0.0);
  if (rows_ == 0) return m;
  for (size_t i = 0; i < m.size(); ++i) m[i] = abs_sum_[i] / static_cast<double>(rows_);
  return m;
}

BlockGram BlockGram::Scaled(const std::vector<float>& factor) const {
  if (static_cast<int64_t>(factor.size()) != k_) {
    throw Error(fmt::format("internal: {} channel factors for a Gram of K {}", factor.size(), k_));
  }
  BlockGram g = *this;
  for (int64_t b = 0; b < num_blocks(); ++b) {
    const int64_t k0 = b * block_, len = std::min(block_, k_ - k0);
    double* d = g.data_.data() + b * block_ * block_;
    for (int64_t i = 0; i < len; ++i) {
      for (int64_t j = i; j < len; ++j) d[i * block_ + j] *= static_cast<double>(factor[k0 + i]) * factor[k0 + j];
    }
  }
  for (int64_t k = 0; k < k_; ++k) g.abs_sum_[k] *= std::fabs(static_cast<double>(factor[k]));
  return g;
}

std::vector<float> AwqLiteInputScales(const std::vector<double>& mean_abs, double alpha) {
  std::vector<float> s(mean_abs.size(), 1.0f);
  double hi = 0.0;
  for (double m : mean_abs) {
    if (std::isfinite(m) && m > hi) hi = m;
  }
  if (alpha == 0.0 || !(hi > 0.0)) return s;
  const double floor = hi * 1e-4;
  std::vector<double> p(mean_abs.size());
  double pmax = 0.0, pmin = std::numeric_limits<double>::infinity();
  for (size_t k = 0; k < p.size(); ++k) {
    const double m = std::isfinite(mean_abs[k]) && mean_abs[k] > floor ? mean_abs[k] : floor;
    p[k] = std::pow(m, alpha);
    pmax = std::max(pmax, p[k]);
    pmin = std::min(pmin, p[k]);
  }
  // The ratio max/min is at most 1e4^alpha, so every s (and 1/s) lies within [1e-2, 1e2].
  const double norm = std::sqrt(pmax * pmin);
  for (size_t k = 0; k < p.size(); ++k) s[k] = static_cast<float>(p[k] / norm);
  return s;
}

namespace {

// Output error dw^T G dw of one block column from the upper triangle of G (row stride `ld`), with
// `y` scratch of `len` values. Written as e = sum_i dw_i (G_ii dw_i + 2 y_i), y_j = sum_{i<j} G_ij dw_i,
// so that the inner loop is an axpy over row i's upper part: its lanes are independent and GCC
// vectorises it, where a dot product per row would be one chain of dependent additions.
double BlockError(const double* g, int64_t ld, const double* __restrict dw, int64_t len, double* __restrict y) {
  std::fill(y, y + len, 0.0);
  for (int64_t i = 0; i < len; ++i) {
    const double d = dw[i];
    if (d == 0.0) continue;
    const double* __restrict gi = g + i * ld;
    for (int64_t j = i + 1; j < len; ++j) y[j] += d * gi[j];
  }
  double e = 0.0;
  for (int64_t i = 0; i < len; ++i) e += dw[i] * (g[i * ld + i] * dw[i] + 2.0 * y[i]);
  return e;
}

bool IsInt4(const BlockedWeightSearch& o) { return o.codec == nullptr || o.codec->element == BlockElement::kInt4; }

// A block's parameters as the model will use them: the search must judge the real scale.
// `global`: nvfp4's per-tensor scale (block_codec.h), unused otherwise.
Int4BlockParams SearchParams(const float* w, int64_t stride, int64_t len, float alpha, const BlockedWeightSearch& o,
                             float min_scale, float global) {
  if (!IsInt4(o)) {
    float amax = 0.0f;  // NaN skipped; an infinity makes the block degenerate (EncodeBlockScale)
    for (int64_t i = 0; i < len; ++i) amax = std::max(amax, std::fabs(w[i * stride]));
    const CodedScale c = EncodeBlockScale(*o.codec, amax * alpha / o.codec->element_max, global, o.half_scales);
    Int4BlockParams p;
    p.scale = c.scale;
    p.scale_code = c.code;
    return p;
  }
  Int4BlockParams p = BlockParams(w, stride, len, alpha, o.zero_point, min_scale);
  if (o.half_scales) p.scale = std::max(HalfToFloat(FloatToHalf(p.scale)), kDegenerateScale);
  return p;
}

// dw[j] = scale[j] * qdq(x[j]) - w[j] over a block (scale null: 1; x and w with their strides), with qdq what the model computes
// for a value of a block with `p`; 0 where w is not finite. One loop per element type, so that
// INT4's inner loop stays as tight as before the other codecs existed.
void BlockDifference(const float* x, int64_t x_stride, const float* w, int64_t w_stride, const float* scale,
                     int64_t len, const Int4BlockParams& p, const BlockedWeightSearch& o, double* dw) {
  const auto fill = [&](auto qdq) {
    if (scale == nullptr) {
      for (int64_t j = 0; j < len; ++j) {
        const float v = w[j * w_stride];
        dw[j] = std::isfinite(v) ? static_cast<double>(qdq(x[j * x_stride])) - v : 0.0;
      }
      return;
    }
    for (int64_t j = 0; j < len; ++j) {
      const float v = w[j * w_stride];
      dw[j] = std::isfinite(v) ? static_cast<double>(scale[j]) * static_cast<double>(qdq(x[j * x_stride])) - v : 0.0;
    }
  };
  if (IsInt4(o)) {
    const bool zp = o.zero_point;
    fill([&](float v) { return QuantDequant(v, p, zp); });
  } else {
    const BlockElement e = o.codec->element;
    fill([&](float v) { return DequantizeBlockElement(e, QuantizeBlockElement(e, v, p.scale), p.scale); });
  }
}

// nvfp4's global scale for the weight values w (or w * s per K channel when `s` is given); 0 for
// the other codecs.
float GlobalScale(const std::vector<float>& w, const std::vector<float>* s, const BlockedLayout& l,
                  const BlockedWeightSearch& o) {
  if (o.codec == nullptr || o.codec->scale_code != BlockScaleCode::kE4M3TimesGlobal) return 0.0f;
  float amax = 0.0f;
  for (size_t e = 0; e < w.size(); ++e) {
    const float v = s ? w[e] * (*s)[static_cast<size_t>((static_cast<int64_t>(e) / l.inner) % l.k)] : w[e];
    if (std::isfinite(v)) amax = std::max(amax, std::fabs(v));
  }
  return Nvfp4GlobalScale(amax, o.half_scales);
}

// Threads for a per-column job over `columns` output columns (at least 8 columns each).
int ColumnThreads(int threads, int64_t columns) {
  return static_cast<int>(std::clamp<int64_t>(threads, 1, std::max<int64_t>(columns / 8, 1)));
}

// Runs fn(begin, end) over [0, columns) split into contiguous ranges, one per thread.
template <typename Fn>
void ForColumns(int threads, int64_t columns, const Fn& fn) {
  if (threads == 1) {
    fn(int64_t{0}, columns);
    return;
  }
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&fn, t, threads, columns] { fn(columns * t / threads, columns * (t + 1) / threads); });
  }
  for (auto& th : pool) th.join();
}

// awq_lite's modelled output error of storing Q(diag(s) W) (RTN, blocks of the layout) while the
// activation is multiplied by `inv` (1/s): per output column and block, dw^T G_b dw with
// dw_j = inv_j * qdq(s_j w_j) - w_j, i.e. the squared output change summed over every calibration
// row under the block-diagonal approximation of X^T X (cross-block terms are not in the Gram).
// The scaled block s_j w_j is formed per block column (the same float products ScaledWeight
// gives), so no scaled copy of the weight is held per alpha. Blocks are the outer loop so that one
// block's Gram stays in cache for every column; each column still sums its blocks in order, and
// columns are summed in column order, so the result does not depend on the threads.
double ScaledRtnError(const std::vector<float>& w, const std::vector<float>& s, const std::vector<float>& inv,
                      const BlockedLayout& l, const BlockGram& g, const BlockedWeightSearch& o) {
  const float min_scale = o.half_scales ? kDegenerateScale : kMinScale;
  const float global = GlobalScale(w, &s, l, o);
  const int64_t columns = l.outer * l.inner, nb = l.num_blocks();
  std::vector<double> column_error(static_cast<size_t>(columns), 0.0);
  ForColumns(ColumnThreads(o.threads, columns), columns, [&](int64_t begin, int64_t end) {
    std::vector<double> dw(static_cast<size_t>(l.block)), y(static_cast<size_t>(l.block));
    std::vector<float> ws(static_cast<size_t>(l.block));
    for (int64_t b = 0; b < nb; ++b) {
      const int64_t k0 = b * l.block, len = std::min(l.block, l.k - k0);
      for (int64_t c = begin; c < end; ++c) {
        const int64_t oo = c / l.inner, i = c % l.inner;
        const int64_t first = (oo * l.k + k0) * l.inner + i;
        for (int64_t j = 0; j < len; ++j) {
          ws[static_cast<size_t>(j)] = w[static_cast<size_t>(first + j * l.inner)] * s[static_cast<size_t>(k0 + j)];
        }
        const Int4BlockParams p = SearchParams(ws.data(), 1, len, 1.0f, o, min_scale, global);
        BlockDifference(ws.data(), 1, w.data() + first, l.inner, inv.data() + k0, len, p, o, dw.data());
        column_error[static_cast<size_t>(c)] += BlockError(g.Block(b), l.block, dw.data(), len, y.data());
      }
    }
  });
  double total = 0.0;
  for (double e : column_error) total += e;
  return total;
}

// diag(s) W: element (o, k, i) times s_k.
std::vector<float> ScaledWeight(const std::vector<float>& w, const std::vector<float>& s, const BlockedLayout& l) {
  std::vector<float> scaled(w.size());
  for (size_t e = 0; e < w.size(); ++e) scaled[e] = w[e] * s[static_cast<size_t>((static_cast<int64_t>(e) / l.inner) % l.k)];
  return scaled;
}

class WeightQuantizer {
 public:
  WeightQuantizer(const std::vector<float>& w, const BlockedLayout& layout, const BlockGram* gram,
                  const BlockedWeightSearch& o, BlockedWeight* out)
      : w_(w),
        l_(layout),
        gram_(gram),
        o_(o),
        out_(out),
        min_scale_(o.half_scales ? kDegenerateScale : kMinScale),
        global_(GlobalScale(w, nullptr, layout, o)) {
    // Computed from integers so that 1 - 0.05 * s gives the same float on every platform.
    for (int s = 1; s < 1000; ++s) {
      const double alpha = 1.0 - o.alpha_step * s;
      if (alpha < o.alpha_min - 1e-9 || alpha <= 0.0) break;
      alphas_.push_back(static_cast<float>(alpha));
    }
  }

  // Output columns are (o, i) pairs; each is quantized independently, so splitting them across
  // threads gives the same bytes as one thread.
  void Run() {
    const int64_t columns = l_.outer * l_.inner;
    codes_.assign(static_cast<size_t>(l_.num_elements()), 0);
    out_->scales.assign(static_cast<size_t>(l_.num_scales()), 0.0f);
    if (o_.zero_point) out_->zero_points.assign(static_cast<size_t>(l_.num_scales()), 0);
    if (!IsInt4(o_)) out_->scale_codes.assign(static_cast<size_t>(l_.num_scales()), 0);
    out_->global_scale = global_;
    clipped_.assign(static_cast<size_t>(columns), 0);
    ForColumns(ColumnThreads(o_.threads, columns), columns, [this](int64_t begin, int64_t end) { Columns(begin, end); });
    for (int64_t c : clipped_) out_->clipped_blocks += c;
    // 4-bit codes two per byte (PackUint4 keeps each code's low nibble: INT4 -1 is 0xF); FP8 a byte each.
    if (IsInt4(o_) || o_.codec->element == BlockElement::kE2M1) out_->packed = PackUint4(codes_);
    else out_->packed.assign(codes_.begin(), codes_.end());
  }

 private:
  Int4BlockParams Params(const float* w, int64_t stride, int64_t len, float alpha) const {
    return SearchParams(w, stride, len, alpha, o_, min_scale_, global_);
  }

  // Blocks outer (one block's Gram stays in cache across the columns); every (block, column) is
  // decided on its own, so the order changes nothing in the result.
  void Columns(int64_t begin, int64_t end) {
    std::vector<double> dw(static_cast<size_t>(l_.block)), y(static_cast<size_t>(l_.block));
    const int64_t nb = l_.num_blocks();
    for (int64_t b = 0; b < nb; ++b) {
      const int64_t k0 = b * l_.block, len = std::min(l_.block, l_.k - k0);
      for (int64_t c = begin; c < end; ++c) {
        const int64_t o = c / l_.inner, i = c % l_.inner;
        const int64_t first = (o * l_.k + k0) * l_.inner + i;
        const float* w = w_.data() + first;
        Int4BlockParams best = Params(w, l_.inner, len, 1.0f);
        if (gram_ != nullptr) {
          double best_err = OutputError(w, len, best, b, dw.data(), y.data());
          bool clipped = false;
          // Descending alphas (0.95 .. 0.50 by default); only a strictly smaller error wins.
          for (float alpha : alphas_) {
            const Int4BlockParams p = Params(w, l_.inner, len, alpha);
            const double err = OutputError(w, len, p, b, dw.data(), y.data());
            if (err < best_err) best_err = err, best = p, clipped = true;
          }
          clipped_[static_cast<size_t>(c)] += clipped;
        }
        const auto s = static_cast<size_t>((o * nb + b) * l_.inner + i);
        out_->scales[s] = best.scale;
        if (o_.zero_point) out_->zero_points[s] = best.zero_point;
        if (!IsInt4(o_)) out_->scale_codes[s] = best.scale_code;
        for (int64_t j = 0; j < len; ++j) codes_[static_cast<size_t>(first + j * l_.inner)] = Code(w[j * l_.inner], best);
      }
    }
  }

  // The stored code of v: INT4 (as its byte), UINT4, or the codec's element.
  uint8_t Code(float v, const Int4BlockParams& p) const {
    if (!IsInt4(o_)) return QuantizeBlockElement(o_.codec->element, v, p.scale);
    if (o_.zero_point) return QuantizeUint4(v, p.scale, p.zero_point);
    return static_cast<uint8_t>(QuantizeInt4(v, p.scale));
  }

  double OutputError(const float* w, int64_t len, const Int4BlockParams& p, int64_t block, double* dw, double* y) const {
    BlockDifference(w, l_.inner, w, l_.inner, nullptr, len, p, o_, dw);
    return BlockError(gram_->Block(block), l_.block, dw, len, y);
  }

  const std::vector<float>& w_;
  BlockedLayout l_;
  const BlockGram* gram_;
  BlockedWeightSearch o_;
  BlockedWeight* out_;
  float min_scale_;
  float global_;                // nvfp4's per-tensor scale (0 otherwise)
  std::vector<uint8_t> codes_;  // one stored code per element, before packing
  std::vector<int64_t> clipped_;
  std::vector<float> alphas_;
};

// awq_lite on one weight (options without awq_lite: they describe the clip search that follows).
void AwqLite(const std::vector<float>& w, const BlockGram& gram, const BlockedWeightSearch& options,
             BlockedWeight* out) {
  const BlockedLayout& l = out->layout;
  const std::vector<double> magnitude = gram.MeanAbs();
  std::vector<float> inv(static_cast<size_t>(l.k)), best_s, best_inv;
  double best_error = 0.0;
  int best = 0;
  for (int t = 0; t <= kAwqLiteAlphaSteps; ++t) {
    const double alpha = static_cast<double>(t) / kAwqLiteAlphaSteps;
    std::vector<float> s = AwqLiteInputScales(magnitude, alpha);
    for (int64_t k = 0; k < l.k; ++k) {
      const float r = 1.0f / s[static_cast<size_t>(k)];
      // The factor the Mul will hold: float16 for a float16 model.
      inv[static_cast<size_t>(k)] = options.half_scales ? HalfToFloat(FloatToHalf(r)) : r;
    }
    const double error = ScaledRtnError(w, s, inv, l, gram, options);
    out->awq_lite_errors.push_back(error);
    // Only a strictly smaller error wins: ties keep the smaller alpha (t = 0 is plain RTN).
    if (t == 0 || error < best_error) {
      best_error = error;
      best = t;
      best_s = std::move(s);
      best_inv = inv;
    }
  }
  if (best == 0) {  // no scaling: the clip search on the original weight, i.e. awq_clip
    WeightQuantizer(w, l, &gram, options, out).Run();
    return;
  }
  out->awq_lite_alpha = static_cast<double>(best) / kAwqLiteAlphaSteps;
  // The scaled weight multiplies x * (1/s): its clip search uses that activation's Gram.
  const BlockGram scaled_gram = gram.Scaled(best_inv);
  out->activation_scales = std::move(best_inv);
  WeightQuantizer(ScaledWeight(w, best_s, l), l, &scaled_gram, options, out).Run();
}

}  // namespace

BlockedWeight QuantizeBlockedWeight(const std::vector<float>& w, const std::vector<int64_t>& shape, int axis,
                              const BlockGram* gram, const BlockedWeightSearch& options) {
  BlockedWeight out;
  out.layout = MakeBlockedLayout(shape, axis, options.block_size);
  out.scale_shape = out.layout.ScaleShape(shape, axis);
  if (static_cast<int64_t>(w.size()) != out.layout.num_elements()) {
    throw Error(fmt::format("internal: weight holds {} values, shape needs {}", w.size(), out.layout.num_elements()));
  }
  // The Gram describes K rows of one activation; it applies to each output column only when the
  // weight is a single [K, N] / [N, K] matrix (a batched MatMul weight multiplies other rows).
  if (gram != nullptr && shape.size() != 2) gram = nullptr;
  if (gram != nullptr && (gram->k() != out.layout.k || gram->block() != out.layout.block)) {
    throw Error(fmt::format("internal: Gram of K {} block {} for a weight of K {} block {}", gram->k(), gram->block(),
                            out.layout.k, out.layout.block));
  }
  if (options.awq_lite) {
    BlockedWeightSearch rtn = options;
    rtn.awq_lite = false;
    if (gram != nullptr) AwqLite(w, *gram, rtn, &out);
    else WeightQuantizer(w, out.layout, nullptr, rtn, &out).Run();
    return out;
  }
  WeightQuantizer(w, out.layout, gram, options, &out).Run();
  return out;
}

}  // namespace ptqkit
