// The state behind ptqkit::CalibrationSet, shared by the files that build one (calibration_set.cc
// for files and tensors, synthetic.cc for generated data).
//
// Each input is a list of segments: ArraySources laid end to end along axis 0, so a directory of
// files (or one large file) is never copied into memory; a batch is assembled from the segments it
// overlaps. Key "" is an array with no name yet (an .npy, or FromTensors' "" key); Validate binds
// it to the model's only input. Not thread-safe; owned by one CalibrationSet.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "data/array_source.h"
#include "ptqkit/calibration.h"

namespace ptqkit {

struct CalibrationSet::Impl {
  struct Segment {
    int64_t first_row;  // index of the source's row 0 in the concatenation
    std::shared_ptr<const data::ArraySource> source;
  };

  struct Input {
    DataType dtype = DataType::kUndefined;
    std::vector<int64_t> shape;  // shape[0] = rows of all segments together
    std::vector<Segment> segments;
    std::string origin;  // where the first segment came from, for messages
    // Set by Validate: the axis its samples lie along (-1: a fixed input, fed whole with every
    // batch, e.g. a scalar) and the type the model wants when the data is cast (float64/float16
    // -> float32, int32 -> int64); kUndefined: no cast.
    int64_t axis = 0;
    DataType cast_to = DataType::kUndefined;

    // Appends `source` after the current rows. REQUIRES: it matches dtype and the dims after
    // axis 0 of the segments already there (the caller reports mismatches, it knows the file
    // names).
    void Append(std::shared_ptr<const data::ArraySource> source);
    // Copies rows [begin, end) of the concatenation to `out`. REQUIRES: 0 <= begin <= end <=
    // shape[0].
    void ReadRows(int64_t begin, int64_t end, std::byte* out) const;
  };

  std::string origin;  // the path, "in-memory tensors" or "synthetic data"
  std::map<std::string, Input> inputs;
  bool validated = false;
  int64_t num_samples = 0;
  // The current view (SetWindow / SetSamples): runs of consecutive samples [begin, end), in order.
  std::vector<std::pair<int64_t, int64_t>> view;
  int64_t view_samples = 0;
  // The runs of samples behind view positions [first, last): pieces of `view`, in order.
  std::vector<std::pair<int64_t, int64_t>> Pieces(int64_t first, int64_t last) const;
};

}  // namespace ptqkit
