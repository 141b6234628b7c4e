#include "data/array_source.h"

#include <fmt/format.h>

#include <cstring>
#include <utility>

#include "data/file_reader.h"
#include "ptqkit/error.h"

namespace ptqkit::data {
namespace {

void CheckRange(const ArraySource& source, int64_t begin, int64_t end) {
  if (begin < 0 || end < begin || end > source.rows()) {
    throw Error(fmt::format("internal: rows [{}, {}) out of range for {} with {} rows", begin, end,
                            source.origin(), source.rows()));
  }
}

}  // namespace

ArraySource::ArraySource(DataType dtype, std::vector<int64_t> shape, std::string origin)
    : dtype_(dtype), shape_(std::move(shape)), origin_(std::move(origin)) {
  if (shape_.empty()) {  // a scalar: stored as one row of one element
    shape_ = {1};
    scalar_ = true;
  }
}

int64_t ArraySource::row_bytes() const {
  int64_t n = static_cast<int64_t>(ElementSize(dtype_));
  for (size_t i = 1; i < shape_.size(); ++i) n *= shape_[i];
  return n;
}

HostTensor ArraySource::ReadRows(int64_t begin, int64_t end) const {
  CheckRange(*this, begin, end);
  std::vector<int64_t> shape = shape_;
  shape[0] = end - begin;
  HostTensor out(dtype_, std::move(shape));
  ReadRows(begin, end, out.bytes.data());
  return out;
}

FileArraySource::FileArraySource(DataType dtype, std::vector<int64_t> shape, std::string origin,
                                 std::string path, int64_t data_offset)
    : ArraySource(dtype, std::move(shape), std::move(origin)),
      path_(std::move(path)),
      data_offset_(data_offset) {}

void FileArraySource::ReadRows(int64_t begin, int64_t end, std::byte* out) const {
  CheckRange(*this, begin, end);
  if (begin == end) return;
  const FileReader file(path_);
  file.Read(data_offset_ + begin * row_bytes(), (end - begin) * row_bytes(), out, "array data");
}

MemoryArraySource::MemoryArraySource(HostTensor tensor, std::string origin)
    : ArraySource(tensor.dtype, tensor.shape, std::move(origin)), tensor_(std::move(tensor)) {
  if (static_cast<int64_t>(tensor_.bytes.size()) != rows() * row_bytes()) {
    throw Error(fmt::format("internal: {} holds {} bytes, its shape {} needs {}", this->origin(),
                            tensor_.bytes.size(), ShapeToString(shape()), rows() * row_bytes()));
  }
}

void MemoryArraySource::ReadRows(int64_t begin, int64_t end, std::byte* out) const {
  CheckRange(*this, begin, end);
  const int64_t row = row_bytes();
  if (end > begin && row > 0)
    std::memcpy(out, tensor_.bytes.data() + begin * row, static_cast<size_t>((end - begin) * row));
}

}  // namespace ptqkit::data
