// FileReader: a read-only file opened for positioned reads (pread), closed on destruction.
// The data stage reads array rows at known offsets; pread keeps no shared file position, so one
// reader can serve reads at any offset without seeking state.
// Movable, not copyable. Read() is safe to call from several threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace ptqkit::data {

class FileReader {
 public:
  // Opens `path` for reading. Throws ptqkit::Error (kIo) naming the path if it does not exist or
  // cannot be opened.
  explicit FileReader(const std::string& path);
  FileReader(FileReader&& other) noexcept;
  FileReader& operator=(FileReader&& other) noexcept;
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;
  ~FileReader();

  // Size of the file when it was opened.
  int64_t size() const { return size_; }
  const std::string& path() const { return path_; }

  // Reads exactly `count` bytes at `offset` into `out`. Throws ptqkit::Error naming the path if the
  // file ends first (`what` says what was being read, e.g. "array data") or the read fails.
  // REQUIRES: offset >= 0, count >= 0.
  void Read(int64_t offset, int64_t count, std::byte* out, const char* what) const;
  // Up to `count` bytes at `offset` (fewer at end of file).
  std::string ReadUpTo(int64_t offset, int64_t count) const;

 private:
  std::string path_;
  int fd_ = -1;
  int64_t size_ = 0;
};

}  // namespace ptqkit::data
