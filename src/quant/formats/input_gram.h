// The Gram matrix H = sum x x^T of what one quantized weight multiplies, collected batch by batch
// (Hessian-aware rounding, quant/corrections/hessian_rounding.h). For a MatMul/Gemm, x is a row of its input
// (the last axis). For a Conv, x is one receptive field ("im2col" patch) of one group: input
// channels of the group x kernel taps, in the weight's [C/group, taps...] order, with zero padding
// as the Conv sees it, so H models exactly what the Conv computes, padding included. One Gram per
// group (a depthwise Conv: one 9 x 9 Gram per channel). Also keeps the sum of x, whose mean gives
// each output channel's mean shift (bias correction of the rounded weight).
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

#include "quant/formats/blocked_weight_search.h"

namespace ptqkit {

// A Conv's kernel placement over its input, 1-D or 2-D (1-D as 2-D with one row).
struct ConvGeometry {
  int64_t group = 1;
  int64_t channels_per_group = 0;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  std::string auto_pad = "NOTSET";
};

// From the Conv node and its weight shape [O, C/group, k...]; false (with `why`) for what is not
// modelled (3-D convs, unknown auto_pad values).
bool MakeConvGeometry(const onnx::NodeProto& conv, const std::vector<int64_t>& weight_shape, ConvGeometry* geometry,
                      std::string* why);

class InputGram {
 public:
  // A MatMul/Gemm input: one Gram of K. A Conv: one per group, K = C/group * taps.
  explicit InputGram(int64_t k);
  InputGram(const ConvGeometry& conv, int64_t k);

  int64_t k() const { return k_; }
  int64_t groups() const { return static_cast<int64_t>(grams_.size()); }
  const BlockGram& gram(int64_t group) const { return grams_[group]; }
  // Mean of x per group (K values), over every row added.
  std::vector<double> Mean(int64_t group) const;
  double bytes() const { return static_cast<double>(grams_.size()) * static_cast<double>(k_ * k_) * 8.0; }

  // Adds one batch of the input (`shape` as ONNX Runtime gave it). Returns false when the shape does
  // not fit (then nothing is added).
  bool Add(const float* x, const std::vector<int64_t>& shape);

 private:
  bool AddRowsOf(const float* x, int64_t rows);
  bool AddPatches(const float* x, const std::vector<int64_t>& shape);
  void Flush(int64_t group, int64_t rows);

  int64_t k_;
  bool conv_ = false;
  ConvGeometry geometry_;
  std::vector<BlockGram> grams_;
  std::vector<std::vector<double>> sums_;
  std::vector<int64_t> counts_;
  std::vector<float> rows_;  // patches waiting for AddRows
};

}  // namespace ptqkit
