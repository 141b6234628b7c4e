#include "base/input_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "ptqkit/error.h"

namespace ptqkit {
namespace {

const char* KindOf(mode_t mode) {
  if (S_ISFIFO(mode)) return "a named pipe";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISDIR(mode)) return "a directory";
  return "not a regular file";
}

[[noreturn]] void Refuse(const std::string& path, std::string_view what, mode_t mode) {
  throw Error(fmt::format("{} '{}' is {}; ptqkit reads only regular files", what, path, KindOf(mode)),
              Error::Kind::kIo);
}

[[noreturn]] void OpenFailed(const std::string& path, std::string_view what, int err) {
  if (err == ENOENT) throw Error(fmt::format("{} '{}' does not exist", what, path), Error::Kind::kIo);
  throw Error(fmt::format("{} '{}' cannot be opened: {}", what, path, std::strerror(err)), Error::Kind::kIo);
}

}  // namespace

InputFile::InputFile(InputFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), size_(other.size_) {}

InputFile& InputFile::operator=(InputFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    size_ = other.size_;
  }
  return *this;
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

int InputFile::release() { return std::exchange(fd_, -1); }

InputFile OpenInputFile(const std::string& path, std::string_view what) {
  if (path.empty()) throw Error(fmt::format("{}: empty path", what), Error::Kind::kIo);
  // Checked by path first, so a FIFO is refused without being opened at all (opening one with
  // O_NONBLOCK would still be harmless, but a device open can have side effects).
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) OpenFailed(path, what, errno);
  if (!S_ISREG(st.st_mode)) Refuse(path, what, st.st_mode);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) OpenFailed(path, what, errno);
  InputFile file(fd, 0);
  // The path may have been swapped between stat and open: what counts is what was opened.
  if (::fstat(fd, &st) != 0) OpenFailed(path, what, errno);
  if (!S_ISREG(st.st_mode)) Refuse(path, what, st.st_mode);
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) (void)::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return InputFile(file.release(), static_cast<int64_t>(st.st_size));
}

int64_t RequireRegularFile(const std::string& path, std::string_view what) {
  return OpenInputFile(path, what).size();
}

std::string ReadWholeInputFile(const std::string& path, std::string_view what, int64_t max_bytes) {
  const InputFile file = OpenInputFile(path, what);
  if (file.size() > max_bytes) {
    throw Error(fmt::format("{} '{}' is {} bytes, more than the {} bytes ptqkit reads for it", what, path,
                            file.size(), max_bytes));
  }
  std::string bytes;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(file.fd(), buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(fmt::format("{} '{}': read failed: {}", what, path, std::strerror(errno)), Error::Kind::kIo);
    }
    if (n == 0) break;
    bytes.append(buffer, static_cast<size_t>(n));
    if (static_cast<int64_t>(bytes.size()) > max_bytes) {
      throw Error(fmt::format("{} '{}' grew past {} bytes while being read", what, path, max_bytes));
    }
  }
  return bytes;
}

}  // namespace ptqkit
