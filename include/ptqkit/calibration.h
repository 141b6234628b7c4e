// CalibrationSet: the calibration samples for a model, one tensor per graph input, with the
// samples stacked along axis 0 (or the input's batch axis, see Validate; a scalar or fixed input
// holds one value that every batch gets). It is read from .npy / .npz / a directory of them, built from
// in-memory tensors, or synthesised (seeded) when the user gives no data.
//
// Validate() checks the set against the model's inputs and must be called before Batches();
// every error names the input, what was expected and what was found.
// Reading is lazy where the format allows it (.npy files and uncompressed .npz members are read
// batch by batch from disk), so memory does not grow with the number of samples.
// Not thread-safe; one reader at a time.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ptqkit/tensor.h"

namespace ptqkit {

// What the model declares for one graph input. Negative dims are dynamic (dim_param or unset).
struct InputSpec {
  std::string name;
  DataType dtype = DataType::kFloat;
  std::vector<int64_t> shape;
};

// One batch: input name -> tensor whose sample axis (usually 0) holds the batch; fixed inputs whole.
using Batch = std::map<std::string, HostTensor>;

class CalibrationSet {
 public:
  // Reads .npy (single-input models; the array is bound to the only input at Validate time),
  // .npz (keys = input names), or a directory of .npy/.npz files taken in sorted name order and
  // concatenated along axis 0. Throws ptqkit::Error naming the file for missing, empty or corrupt input.
  static CalibrationSet FromPath(const std::string& path);
  // Tensors already in memory; key = input name ("" binds to the only input of a single-input model).
  static CalibrationSet FromTensors(std::map<std::string, HostTensor> tensors);
  // Seeded synthetic data for the given inputs: float inputs ~ N(0, 1); integer inputs uniform in
  // [0, 10); bool uniform. Dynamic dims: axis 0 -> num_samples, others -> error unless given in
  // `shapes` (name -> full shape whose axis 0 is the batch size, used for the sample shape).
  static CalibrationSet Synthetic(const std::vector<InputSpec>& inputs, int64_t num_samples, uint64_t seed,
                                  const std::map<std::string, std::vector<int64_t>>& shapes = {});

  CalibrationSet(CalibrationSet&&) noexcept;
  CalibrationSet& operator=(CalibrationSet&&) noexcept;
  ~CalibrationSet();

  // Checks names (missing / extra), dtypes, ranks, static dims (axis 0 excepted) and that all
  // inputs have the same number of samples. `shapes` are --calibration_shapes (name -> shape);
  // their non-batch dims must match the data too. Throws ptqkit::Error.
  //
  // Sample axis per input: `batch_axes` (--calibration_batch_axis, name -> axis) where given;
  // else a scalar input, or one whose data has exactly the model's fully static shape, is fixed
  // (fed unchanged with every batch); else an input with exactly one dynamic dim k != 0 (and a
  // static axis 0 other than 1, with the data matching every static dim) takes its samples
  // along k, which is logged (recurrent state [layers, B, hidden]); else axis 0.
  // float64/float16 data for a float32 input is cast with a warning, int32 for int64 likewise.
  void Validate(const std::vector<InputSpec>& inputs,
                const std::map<std::string, std::vector<int64_t>>& shapes = {},
                const std::map<std::string, int64_t>& batch_axes = {});
  // The axis input `name`'s samples lie along; -1 for a fixed input. REQUIRES: Validate().
  int64_t sample_axis(const std::string& name) const;

  // Number of samples in the current view. REQUIRES: Validate() succeeded.
  int64_t num_samples() const;
  // Restricts num_samples/NumBatches/ReadBatch to samples [begin, end) of the whole set (batch 0
  // starts at `begin`). Validate() resets the view to the whole set.
  // REQUIRES: Validate() succeeded and 0 <= begin <= end <= total samples; throws otherwise.
  void SetWindow(int64_t begin, int64_t end);
  // Restricts them to the given samples of the whole set, in that order (batches are cut from
  // the list), so that calibration and the loss report's held-out samples can split the data by
  // sample, strided through the file, whatever the batch size. Consecutive indices are read as one
  // run. REQUIRES: Validate() succeeded and every index in [0, total samples); throws otherwise.
  void SetSamples(const std::vector<int64_t>& samples);
  int64_t total_samples() const;
  // Number of batches of `batch_size` samples; the last one may be smaller. REQUIRES: batch_size >= 1.
  int64_t NumBatches(int64_t batch_size) const;
  // Reads batch `index` (view positions [index*batch_size, min(num_samples, (index+1)*batch_size))).
  Batch ReadBatch(int64_t index, int64_t batch_size) const;
  // Input names in the set, sorted.
  std::vector<std::string> names() const;

  struct Impl;

 private:
  explicit CalibrationSet(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Parses "--calibration_batch_axis" text: "state:1,h:1" (entries also separable by spaces).
std::map<std::string, int64_t> ParseBatchAxisList(const std::string& text);

// Parses "--calibration_shapes" text: "in:8x3x224x224,mask:8x128" (entries also separable by spaces).
std::map<std::string, std::vector<int64_t>> ParseShapeList(const std::string& text);

}  // namespace ptqkit
