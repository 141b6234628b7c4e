// ArraySource: one array of calibration data whose rows (slices along axis 0) are read on demand.
// A CalibrationSet input is a list of these, one per file, concatenated along axis 0; that lets a
// directory of files or a large .npy be consumed batch by batch without holding it in memory.
//
// FileArraySource reads rows straight from a byte range of a file (a .npy, or an uncompressed
// member of an .npz) with pread, opening the file per call so a directory of many files does not
// hold many descriptors. MemoryArraySource serves rows from a tensor it owns (in-memory data,
// inflated .npz members).
// Sources are immutable after construction; ReadRows may be called from several threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ptqkit/tensor.h"

namespace ptqkit::data {

class ArraySource {
 public:
  virtual ~ArraySource() = default;

  DataType dtype() const { return dtype_; }
  // Full shape; shape()[0] is the number of rows. Rank >= 1.
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t rows() const { return shape_[0]; }
  // The array was rank 0 (a scalar); shape() then reads [1].
  bool scalar() const { return scalar_; }
  // Bytes of one row (the product of the dims after axis 0, times the element size).
  int64_t row_bytes() const;
  // Where the data comes from, for error messages: "a.npy", "b.npz:x".
  const std::string& origin() const { return origin_; }

  // Copies rows [begin, end) to `out`, densely. REQUIRES: 0 <= begin <= end <= rows() and `out`
  // has room for (end - begin) * row_bytes() bytes. Throws ptqkit::Error on I/O failure.
  virtual void ReadRows(int64_t begin, int64_t end, std::byte* out) const = 0;

  // Convenience: rows [begin, end) as a tensor.
  HostTensor ReadRows(int64_t begin, int64_t end) const;

 protected:
  // REQUIRES: shape.size() >= 1 (callers reject scalars with a message naming the file).
  ArraySource(DataType dtype, std::vector<int64_t> shape, std::string origin);

 private:
  DataType dtype_;
  std::vector<int64_t> shape_;
  bool scalar_ = false;
  std::string origin_;
};

class FileArraySource final : public ArraySource {
 public:
  // The array's first byte is at `data_offset` in `path`. The caller has checked that the file
  // holds all rows; a file that shrinks later makes ReadRows throw.
  FileArraySource(DataType dtype, std::vector<int64_t> shape, std::string origin, std::string path,
                  int64_t data_offset);
  void ReadRows(int64_t begin, int64_t end, std::byte* out) const override;
  using ArraySource::ReadRows;

 private:
  std::string path_;
  int64_t data_offset_;
};

class MemoryArraySource final : public ArraySource {
 public:
  // REQUIRES: tensor.shape.size() >= 1 and tensor.bytes matches its shape and dtype.
  MemoryArraySource(HostTensor tensor, std::string origin);
  void ReadRows(int64_t begin, int64_t end, std::byte* out) const override;
  using ArraySource::ReadRows;

 private:
  HostTensor tensor_;
};

}  // namespace ptqkit::data
