#include "quant/formats/input_gram.h"

#include <cmath>

namespace ptqkit {
namespace {

constexpr int64_t kRowsPerFlush = 256;  // patches gathered before one AddRows

// Output length and leading padding of one spatial axis.
struct AxisPlan {
  int64_t out = 0, begin = 0;
};
AxisPlan PlanAxis(int64_t in, int64_t k, int64_t stride, int64_t dilation, int64_t pad_begin, int64_t pad_end,
                  const std::string& auto_pad) {
  AxisPlan a;
  const int64_t span = dilation * (k - 1) + 1;
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    a.out = (in + stride - 1) / stride;
    const int64_t total = std::max<int64_t>(0, (a.out - 1) * stride + span - in);
    a.begin = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
  } else if (auto_pad == "VALID") {
    a.out = in >= span ? (in - span) / stride + 1 : 0;
  } else {
    a.begin = pad_begin;
    const int64_t padded = in + pad_begin + pad_end;
    a.out = padded >= span ? (padded - span) / stride + 1 : 0;
  }
  return a;
}

}  // namespace

bool MakeConvGeometry(const onnx::NodeProto& conv, const std::vector<int64_t>& weight_shape, ConvGeometry* g,
                      std::string* why) {
  const size_t dims = weight_shape.size() - 2;
  if (weight_shape.size() != 3 && weight_shape.size() != 4) {
    *why = "only 1-D and 2-D Convs are modelled";
    return false;
  }
  std::vector<int64_t> strides(dims, 1), dilations(dims, 1), pads(2 * dims, 0);
  for (const auto& a : conv.attribute()) {
    if (a.name() == "group") g->group = a.i();
    if (a.name() == "auto_pad") g->auto_pad = a.s();
    if (a.name() == "strides" && a.ints_size() == static_cast<int>(dims)) strides.assign(a.ints().begin(), a.ints().end());
    if (a.name() == "dilations" && a.ints_size() == static_cast<int>(dims)) {
      dilations.assign(a.ints().begin(), a.ints().end());
    }
    if (a.name() == "pads" && a.ints_size() == static_cast<int>(2 * dims)) pads.assign(a.ints().begin(), a.ints().end());
  }
  if (g->auto_pad != "NOTSET" && g->auto_pad != "VALID" && g->auto_pad != "SAME_UPPER" && g->auto_pad != "SAME_LOWER") {
    *why = "auto_pad '" + g->auto_pad + "' is not modelled";
    return false;
  }
  if (g->group <= 0 || weight_shape[0] % g->group != 0) {
    *why = "its group count does not divide the output channels";
    return false;
  }
  g->channels_per_group = weight_shape[1];
  if (dims == 1) {
    g->kernel_w = weight_shape[2];
    g->stride_w = strides[0];
    g->dilation_w = dilations[0];
    g->pad_left = pads[0];
    g->pad_right = pads[1];
  } else {
    g->kernel_h = weight_shape[2];
    g->kernel_w = weight_shape[3];
    g->stride_h = strides[0];
    g->stride_w = strides[1];
    g->dilation_h = dilations[0];
    g->dilation_w = dilations[1];
    g->pad_top = pads[0];
    g->pad_left = pads[1];
    g->pad_bottom = pads[2];
    g->pad_right = pads[3];
  }
  if (g->stride_h <= 0 || g->stride_w <= 0 || g->dilation_h <= 0 || g->dilation_w <= 0) {
    *why = "its strides or dilations are not positive";
    return false;
  }
  return true;
}

InputGram::InputGram(int64_t k) : k_(k), grams_(1, BlockGram(k, k)), sums_(1, std::vector<double>(k)), counts_(1) {}

InputGram::InputGram(const ConvGeometry& conv, int64_t k)
    : k_(k), conv_(true), geometry_(conv), grams_(static_cast<size_t>(conv.group), BlockGram(k, k)),
      sums_(static_cast<size_t>(conv.group), std::vector<double>(k)), counts_(static_cast<size_t>(conv.group)) {}

std::vector<double> InputGram::Mean(int64_t group) const {
  std::vector<double> m(sums_[group]);
  for (double& v : m) v = counts_[group] > 0 ? v / static_cast<double>(counts_[group]) : 0.0;
  return m;
}

bool InputGram::Add(const float* x, const std::vector<int64_t>& shape) {
  if (!conv_) {
    if (shape.empty() || shape.back() != k_) return false;
    int64_t rows = 1;
    for (size_t d = 0; d + 1 < shape.size(); ++d) rows *= shape[d];
    return AddRowsOf(x, rows);
  }
  return AddPatches(x, shape);
}

bool InputGram::AddRowsOf(const float* x, int64_t rows) {
  grams_[0].AddRows(x, rows);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < k_; ++j) {
      const float v = x[r * k_ + j];
      if (std::isfinite(v)) sums_[0][j] += v;
    }
  }
  counts_[0] += rows;
  return true;
}

void InputGram::Flush(int64_t group, int64_t rows) {
  if (rows == 0) return;
  grams_[group].AddRows(rows_.data(), rows);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < k_; ++j) {
      const float v = rows_[r * k_ + j];
      if (std::isfinite(v)) sums_[group][j] += v;
    }
  }
  counts_[group] += rows;
}

bool InputGram::AddPatches(const float* x, const std::vector<int64_t>& shape) {
  const ConvGeometry& g = geometry_;
  const bool one_d = shape.size() == 3;
  if (shape.size() != 3 && shape.size() != 4) return false;
  if (shape[1] != g.group * g.channels_per_group) return false;
  if (g.channels_per_group * g.kernel_h * g.kernel_w != k_) return false;
  const int64_t n = shape[0], channels = shape[1];
  const int64_t in_h = one_d ? 1 : shape[2], in_w = shape.back();
  const AxisPlan h = PlanAxis(in_h, g.kernel_h, g.stride_h, g.dilation_h, g.pad_top, g.pad_bottom, g.auto_pad);
  const AxisPlan w = PlanAxis(in_w, g.kernel_w, g.stride_w, g.dilation_w, g.pad_left, g.pad_right, g.auto_pad);
  rows_.resize(static_cast<size_t>(kRowsPerFlush * k_));
  for (int64_t group = 0; group < g.group; ++group) {
    int64_t pending = 0;
    for (int64_t s = 0; s < n; ++s) {
      for (int64_t oh = 0; oh < h.out; ++oh) {
        for (int64_t ow = 0; ow < w.out; ++ow) {
          float* row = rows_.data() + pending * k_;
          for (int64_t c = 0; c < g.channels_per_group; ++c) {
            const float* plane = x + (s * channels + group * g.channels_per_group + c) * in_h * in_w;
            for (int64_t a = 0; a < g.kernel_h; ++a) {
              const int64_t ih = oh * g.stride_h - h.begin + a * g.dilation_h;
              for (int64_t b = 0; b < g.kernel_w; ++b) {
                const int64_t iw = ow * g.stride_w - w.begin + b * g.dilation_w;
                const bool inside = ih >= 0 && ih < in_h && iw >= 0 && iw < in_w;
                *row++ = inside ? plane[ih * in_w + iw] : 0.0f;
              }
            }
          }
          if (++pending == kRowsPerFlush) {
            Flush(group, pending);
            pending = 0;
          }
        }
      }
    }
    Flush(group, pending);
  }
  return true;
}

}  // namespace ptqkit
