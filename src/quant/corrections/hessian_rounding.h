// Hessian-aware weight rounding (GPTQ: Frantar et al. 2022, "GPTQ: Accurate Post-Training
// Quantization for Generative Pre-trained Transformers", itself the OBQ/Optimal Brain Surgeon update
// applied one input column at a time). Why this one and not AdaRound's learned rounding: it needs
// only the Gram matrix H = sum x x^T of each layer's input, which one streaming pass collects
// (memory independent of the number of samples, as everywhere in ptqkit), it is closed-form and
// deterministic (no learning rate, iterations or seed), and it costs rows * K^2 per weight instead
// of thousands of gradient steps per layer, which a 2-core CPU cannot afford. It writes plain
// integer codes on the same per-channel scales as round-to-nearest: standard Q/DQ, nothing else.
//
// The objective per output channel o is the layer's output error on the calibration inputs,
//     e_o = (w_hat_o - w_o)^T H (w_hat_o - w_o),
// minimised greedily: input columns are rounded in order of decreasing H_ii ("act order"), and the
// error each rounding makes is pushed onto the columns not yet rounded through the Cholesky factor
// of H^-1, where it cancels best. H gets 1% of its mean diagonal added (the usual damping), a
// column no sample ever activates (H_ii = 0) gets 1.
//
// The result is written as float values that the Q/DQ rewrite quantizes back to exactly the codes
// chosen here: each row keeps its original absolute maximum (that element's code is pinned to
// +-qmax, and its value is kept bit for bit), so the per-channel scale the rewrite computes from
// the weight is the one used here, and every other value is the dequantized code. Stateless.
#pragma once

#include <cstdint>
#include <vector>

#include "quant/formats/formats.h"

namespace ptqkit {

struct HessianRoundingResult {
  bool rounded = false;     // false: the weight was left as it was (see `why_not`)
  const char* why_not = "";
  // The modelled output error sum_o e_o (undamped H) with round-to-nearest and with the Hessian-aware
  // rounding; the weight is only changed when the latter is smaller.
  double nearest_error = 0.0;
  double rounded_error = 0.0;
};

// A Cholesky factor of one input's damped inverse Gram, computed once and shared by every weight
// that reads the same input (a transformer's Q, K and V projections).
struct InverseHessianFactor {
  int64_t k = 0;
  std::vector<int64_t> order;  // column processing order (decreasing H_ii)
  std::vector<double> upper;   // U with U^T U = (H_perm + damping)^-1, K x K row-major, upper triangle
  std::vector<double> gram;    // H (undamped, full symmetric, original column order), for the errors
  bool ok = false;
};

// `gram_upper`: K x K row-major with the upper triangle i <= j filled (BlockGram's layout with one
// block). Returns ok = false when H cannot be factored even with 10^4 times the damping.
InverseHessianFactor FactorInverseHessian(const double* gram_upper, int64_t k);

// Rounds `w` (rows x K, row-major: one output channel per row, its K inputs in the Gram's order) to
// `format`'s grid in place. `row_amax`: each row's scale is ScaleFromAmax(row_amax[r], qmax);
// per_tensor: one amax (row_amax[0]) for every row, pinned at its one largest element. Rows whose
// amax is not positive and finite are left as they are. `threads` >= 1 split the rows.
HessianRoundingResult RoundWithHessian(std::vector<float>* w, int64_t rows, const InverseHessianFactor& factor,
                                       const QuantFormat& format, float qmax, bool per_tensor, int threads);

}  // namespace ptqkit
