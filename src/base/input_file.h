// Opening the files ptqkit reads. Every input (model, external data, .npy/.npz, JSON) goes through
// OpenInputFile, so one rule holds everywhere: only regular files are read. A named pipe would
// block the open (or the first read) forever and a device can be endless (/dev/zero), so both are
// refused at once, naming the file; the open itself never blocks (O_NONBLOCK until the fstat says
// what it is).
// Free functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ptqkit {

// An open read-only descriptor, closed on destruction. Movable, not copyable.
class InputFile {
 public:
  InputFile() = default;
  InputFile(int fd, int64_t size) : fd_(fd), size_(size) {}
  InputFile(InputFile&& other) noexcept;
  InputFile& operator=(InputFile&& other) noexcept;
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  ~InputFile();

  int fd() const { return fd_; }
  int64_t size() const { return size_; }
  // Gives up ownership of the descriptor.
  int release();

 private:
  int fd_ = -1;
  int64_t size_ = 0;
};

// Opens `path` for reading. `what` says what the file is for messages ("model file",
// "calibration data", ...). Throws ptqkit::Error (kIo) naming the file when it is missing, not
// readable, a directory, or not a regular file (pipe, socket, device).
InputFile OpenInputFile(const std::string& path, std::string_view what);

// The same checks without keeping the file open, for readers that open by path themselves
// (minizip). Returns the file's size.
int64_t RequireRegularFile(const std::string& path, std::string_view what);

// Reads the whole file (a JSON document, a small config). Refuses files over `max_bytes`.
std::string ReadWholeInputFile(const std::string& path, std::string_view what,
                               int64_t max_bytes = int64_t{1} << 31);

}  // namespace ptqkit
