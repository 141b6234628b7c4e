#include "base/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "ptqkit/error.h"

namespace ptqkit {
namespace fs = std::filesystem;

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!temp_path_.empty()) ::unlink(temp_path_.c_str());
}

void AtomicFileWriter::Stage(const std::string& path, std::string_view bytes) {
  Open(path);
  Append(bytes);
  Finish();
}

void AtomicFileWriter::Open(const std::string& path) {
  const fs::path target(path);
  fs::path dir = target.parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw Error(fmt::format("cannot write '{}': folder '{}' does not exist", path, dir.string()), Error::Kind::kIo);
  }
  if (fs::is_directory(target, ec)) {
    throw Error(fmt::format("cannot write '{}': it is a directory", path), Error::Kind::kIo);
  }
  // The final rename would replace whatever is there: never a pipe, device or socket (think of
  // /dev/null when running as root).
  if (fs::exists(target, ec) && !fs::is_regular_file(target, ec)) {
    throw Error(fmt::format("cannot write '{}': it exists and is not a regular file", path), Error::Kind::kIo);
  }
  std::string temp = (dir / fmt::format(".{}.tmp-XXXXXX", target.filename().string())).string();
  const int fd = ::mkstemp(temp.data());
  if (fd < 0) {
    throw Error(fmt::format("cannot write '{}': {}", path, std::strerror(errno)), Error::Kind::kIo);
  }
  temp_path_ = temp;
  final_path_ = path;
  fd_ = fd;
  size_ = 0;
}

void AtomicFileWriter::Append(std::string_view bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(fmt::format("cannot write '{}': {}", final_path_, std::strerror(errno)), Error::Kind::kIo);
    }
    done += static_cast<size_t>(n);
  }
  size_ += bytes.size();
}

void AtomicFileWriter::Finish() {
  // mkstemp creates 0600 files; give the output the usual permissions.
  (void)::fchmod(fd_, 0644);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    throw Error(fmt::format("cannot write '{}': {}", final_path_, std::strerror(errno)), Error::Kind::kIo);
  }
}

void AtomicFileWriter::Commit() {
  if (temp_path_.empty()) return;
  if (std::rename(temp_path_.c_str(), final_path_.c_str()) != 0) {
    throw Error(fmt::format("cannot write '{}': {}", final_path_, std::strerror(errno)), Error::Kind::kIo);
  }
  temp_path_.clear();
}

void WriteFileAtomically(const std::string& path, std::string_view bytes) {
  AtomicFileWriter writer;
  writer.Stage(path, bytes);
  writer.Commit();
}

}  // namespace ptqkit
