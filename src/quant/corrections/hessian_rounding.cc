#include "quant/corrections/hessian_rounding.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <thread>

#include "quant/formats/numerics.h"

namespace ptqkit {
namespace {

constexpr double kDamping = 0.01;  // of the mean diagonal, GPTQ's default
constexpr int kRowTile = 8;        // rows updated together, so one row of U serves several

// Four partial sums: the compiler may not reorder a floating-point reduction itself.
double Dot(const double* a, const double* b, int64_t n) {
  double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += a[i] * b[i];
    s1 += a[i + 1] * b[i + 1];
    s2 += a[i + 2] * b[i + 2];
    s3 += a[i + 3] * b[i + 3];
  }
  for (; i < n; ++i) s0 += a[i] * b[i];
  return (s0 + s1) + (s2 + s3);
}

// In place: the lower triangle of `a` (k x k row-major) becomes L with L L^T = a. False when a
// pivot is not positive (not positive definite in floating point).
bool CholeskyLower(std::vector<double>* a, int64_t k) {
  double* m = a->data();
  for (int64_t j = 0; j < k; ++j) {
    double* rj = m + j * k;
    const double d = rj[j] - Dot(rj, rj, j);
    if (!(d > 0.0) || !std::isfinite(d)) return false;
    const double ljj = std::sqrt(d);
    rj[j] = ljj;
    for (int64_t i = j + 1; i < k; ++i) {
      double* ri = m + i * k;
      ri[j] = (ri[j] - Dot(ri, rj, j)) / ljj;
    }
  }
  return true;
}

// U with U^T U = (L L^T)^-1, from the lower factor L: with T = L^-T (upper, built row by row so
// every sum runs over contiguous memory), H^-1 = T T^T, whose lower Cholesky factor M gives U = M^T.
std::vector<double> UpperFactorOfInverse(const std::vector<double>& l, int64_t k, bool* ok) {
  std::vector<double> t(static_cast<size_t>(k * k), 0.0);  // T[j][i] = (L^-1)[i][j], i >= j
  for (int64_t j = 0; j < k; ++j) {
    double* tj = t.data() + j * k;
    tj[j] = 1.0 / l[j * k + j];
    for (int64_t i = j + 1; i < k; ++i) {
      const double* li = l.data() + i * k;
      tj[i] = -Dot(li + j, tj + j, i - j) / li[i];
    }
  }
  std::vector<double> inverse(static_cast<size_t>(k * k), 0.0);  // H^-1[a][b] = sum_{i >= max(a,b)} T[a][i] T[b][i]
  for (int64_t a = 0; a < k; ++a) {
    for (int64_t b = 0; b <= a; ++b) {
      inverse[a * k + b] = Dot(t.data() + a * k + a, t.data() + b * k + a, k - a);
    }
  }
  *ok = CholeskyLower(&inverse, k);
  std::vector<double> u(static_cast<size_t>(k * k), 0.0);
  for (int64_t i = 0; i < k; ++i) {
    for (int64_t j = i; j < k; ++j) u[i * k + j] = inverse[j * k + i];
  }
  return u;
}

// One element: the value the Q/DQ pair will hand the consumer (`run`) and the float value written
// into the weight (`stored`, which the rewrite quantizes back to the same code; kept within the
// row's amax so the rewrite's scale is unchanged).
struct Rounded {
  float run;
  float stored;
};
Rounded RoundTo(const QuantFormat& format, double v, float scale, float amax) {
  const float clamped = static_cast<float>(std::clamp(v, -static_cast<double>(amax), static_cast<double>(amax)));
  const float run = format.dequantize(format.quantize(clamped, scale), scale);
  return {run, std::fabs(run) > amax ? std::copysign(amax, run) : run};
}

struct RowSetup {
  std::vector<float> scale, amax;
  std::vector<int64_t> pinned;  // per row: the column kept bit for bit (its |w| is the amax); -1 none
};

RowSetup SetUpRows(const std::vector<float>& w, int64_t rows, int64_t k, float qmax, bool per_tensor) {
  RowSetup s;
  s.scale.assign(static_cast<size_t>(rows), 0.0f);
  s.amax.assign(static_cast<size_t>(rows), 0.0f);
  s.pinned.assign(static_cast<size_t>(rows), -1);
  float global = 0.0f;
  int64_t global_at = -1;
  for (int64_t r = 0; r < rows; ++r) {
    float a = 0.0f;
    int64_t at = -1;
    for (int64_t c = 0; c < k; ++c) {
      const float v = std::fabs(w[r * k + c]);
      if (v > a) a = v, at = r * k + c;
    }
    s.amax[r] = a;
    s.pinned[r] = at < 0 ? -1 : at - r * k;
    if (a > global) global = a, global_at = at;
  }
  if (per_tensor) {
    for (int64_t r = 0; r < rows; ++r) {
      s.amax[r] = global;
      s.pinned[r] = global_at / k == r ? global_at % k : -1;
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    if (s.amax[r] > 0.0f && std::isfinite(s.amax[r])) s.scale[r] = ScaleFromAmax(s.amax[r], qmax, "", false);
  }
  return s;
}

// sum over rows of d^T H d, d = run - original.
double ModelledError(const std::vector<float>& run, const std::vector<float>& original, int64_t r0, int64_t r1,
                     const InverseHessianFactor& f) {
  const int64_t k = f.k;
  std::vector<double> d(static_cast<size_t>(k));
  double e = 0.0;
  for (int64_t r = r0; r < r1; ++r) {
    for (int64_t c = 0; c < k; ++c) d[c] = static_cast<double>(run[r * k + c]) - original[r * k + c];
    for (int64_t c = 0; c < k; ++c) {
      if (d[c] != 0.0) e += d[c] * Dot(f.gram.data() + c * k, d.data(), k);
    }
  }
  return e;
}

// GPTQ on rows [r0, r1): `run`/`stored` receive each element's values; `nearest` the RTN run values.
void RoundRows(const std::vector<float>& w, int64_t r0, int64_t r1, const RowSetup& setup,
               const InverseHessianFactor& f, const QuantFormat& format, std::vector<float>* run,
               std::vector<float>* stored, std::vector<float>* nearest) {
  const int64_t k = f.k;
  std::vector<double> tile(static_cast<size_t>(kRowTile * k));
  std::vector<double> err(kRowTile);
  for (int64_t t0 = r0; t0 < r1; t0 += kRowTile) {
    const int64_t n = std::min<int64_t>(kRowTile, r1 - t0);
    for (int64_t r = 0; r < n; ++r) {
      for (int64_t p = 0; p < k; ++p) tile[r * k + p] = w[(t0 + r) * k + f.order[p]];
    }
    for (int64_t p = 0; p < k; ++p) {
      const int64_t c = f.order[p];
      const double* ui = f.upper.data() + p * k;
      for (int64_t r = 0; r < n; ++r) {
        const int64_t row = t0 + r;
        const size_t at = static_cast<size_t>(row * k + c);
        err[r] = 0.0;
        if (setup.scale[row] == 0.0f) {  // degenerate row: left as it is
          (*run)[at] = (*stored)[at] = (*nearest)[at] = w[at];
          continue;
        }
        const double target = tile[r * k + p];
        Rounded q = RoundTo(format, target, setup.scale[row], setup.amax[row]);
        if (c == setup.pinned[row]) q = {RoundTo(format, w[at], setup.scale[row], setup.amax[row]).run, w[at]};
        (*run)[at] = q.run;
        (*stored)[at] = q.stored;
        (*nearest)[at] = RoundTo(format, w[at], setup.scale[row], setup.amax[row]).run;
        err[r] = (target - q.run) / ui[p];
      }
      for (int64_t r = 0; r < n; ++r) {
        const double e = err[r];
        if (e == 0.0) continue;
        double* x = tile.data() + r * k;
        for (int64_t j = p + 1; j < k; ++j) x[j] -= e * ui[j];
      }
    }
  }
}

}  // namespace

InverseHessianFactor FactorInverseHessian(const double* gram_upper, int64_t k) {
  InverseHessianFactor f;
  f.k = k;
  f.gram.assign(static_cast<size_t>(k * k), 0.0);
  for (int64_t i = 0; i < k; ++i) {
    for (int64_t j = i; j < k; ++j) f.gram[i * k + j] = f.gram[j * k + i] = gram_upper[i * k + j];
  }
  double mean_diag = 0.0;
  for (int64_t i = 0; i < k; ++i) mean_diag += f.gram[i * k + i];
  mean_diag /= static_cast<double>(k);
  if (!(mean_diag > 0.0) || !std::isfinite(mean_diag)) return f;
  f.order.resize(static_cast<size_t>(k));
  std::iota(f.order.begin(), f.order.end(), 0);
  std::stable_sort(f.order.begin(), f.order.end(),
                   [&](int64_t a, int64_t b) { return f.gram[a * k + a] > f.gram[b * k + b]; });
  for (double damping = kDamping * mean_diag; damping <= 1e4 * kDamping * mean_diag; damping *= 10.0) {
    std::vector<double> l(static_cast<size_t>(k * k), 0.0);
    for (int64_t a = 0; a < k; ++a) {
      for (int64_t b = 0; b <= a; ++b) l[a * k + b] = f.gram[f.order[a] * k + f.order[b]];
      if (l[a * k + a] == 0.0) l[a * k + a] = 1.0;  // an input never activated: its rounding costs nothing
      l[a * k + a] += damping;
    }
    if (!CholeskyLower(&l, k)) continue;
    f.upper = UpperFactorOfInverse(l, k, &f.ok);
    if (f.ok) break;
  }
  return f;
}

HessianRoundingResult RoundWithHessian(std::vector<float>* w, int64_t rows, const InverseHessianFactor& factor,
                                       const QuantFormat& format, float qmax, bool per_tensor, int threads) {
  HessianRoundingResult result;
  const int64_t k = factor.k;
  if (!factor.ok) {
    result.why_not = "its input's Gram matrix has no positive diagonal or cannot be factored";
    return result;
  }
  for (float v : *w) {
    if (!std::isfinite(v)) {
      result.why_not = "it holds NaN or Inf";
      return result;
    }
  }
  const RowSetup setup = SetUpRows(*w, rows, k, qmax, per_tensor);
  std::vector<float> run(w->size()), stored(w->size()), nearest(w->size());
  const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(threads, (rows + kRowTile - 1) / kRowTile));
  std::vector<double> nearest_error(static_cast<size_t>(parts)), rounded_error(static_cast<size_t>(parts));
  const auto work = [&](int64_t part) {
    const int64_t r0 = rows * part / parts, r1 = rows * (part + 1) / parts;
    RoundRows(*w, r0, r1, setup, factor, format, &run, &stored, &nearest);
    nearest_error[part] = ModelledError(nearest, *w, r0, r1, factor);
    rounded_error[part] = ModelledError(run, *w, r0, r1, factor);
  };
  std::vector<std::thread> pool;
  for (int64_t p = 1; p < parts; ++p) pool.emplace_back(work, p);
  work(0);
  for (auto& t : pool) t.join();
  for (int64_t p = 0; p < parts; ++p) {
    result.nearest_error += nearest_error[p];
    result.rounded_error += rounded_error[p];
  }
  if (!(result.rounded_error < result.nearest_error)) {
    result.why_not = "round-to-nearest already has the smaller modelled error";
    return result;
  }
  *w = std::move(stored);
  result.rounded = true;
  return result;
}

}  // namespace ptqkit
