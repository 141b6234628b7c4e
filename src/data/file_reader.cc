#include "data/file_reader.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "base/input_file.h"
#include "ptqkit/error.h"

namespace ptqkit::data {

FileReader::FileReader(const std::string& path) : path_(path) {
  // Regular files only: a named pipe would block, a device (/dev/zero) never end.
  InputFile file = OpenInputFile(path, "calibration data");
  size_ = file.size();
  fd_ = file.release();
}

FileReader::FileReader(FileReader&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)), size_(other.size_) {}

FileReader& FileReader::operator=(FileReader&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    size_ = other.size_;
  }
  return *this;
}

FileReader::~FileReader() {
  if (fd_ >= 0) ::close(fd_);
}

void FileReader::Read(int64_t offset, int64_t count, std::byte* out, const char* what) const {
  int64_t done = 0;
  while (done < count) {
    const ssize_t n = ::pread(fd_, out + done, static_cast<size_t>(count - done),
                              static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(fmt::format("{}: read failed at offset {}: {}", path_, offset + done,
                              std::strerror(errno)),
                  Error::Kind::kIo);
    }
    if (n == 0) {
      throw Error(fmt::format("{}: truncated: file ends at byte {}, but {} needs bytes {} to {}",
                              path_, offset + done, what, offset, offset + count));
    }
    done += n;
  }
}

std::string FileReader::ReadUpTo(int64_t offset, int64_t count) const {
  const int64_t available = std::max<int64_t>(0, std::min(count, size_ - offset));
  std::string out(static_cast<size_t>(available), '\0');
  Read(offset, available, reinterpret_cast<std::byte*>(out.data()), "the header");
  return out;
}

}  // namespace ptqkit::data
