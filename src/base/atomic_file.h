// AtomicFileWriter: write a file so that it either appears complete or not at all.
// Stage() writes the bytes to a temporary file in the destination folder (same file system, so
// the final rename is atomic); Commit() renames it into place. If the writer is destroyed without
// Commit() (an error happened in between), the temporary file is removed.
// Not thread-safe; one writer per output file.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ptqkit {

class AtomicFileWriter {
 public:
  AtomicFileWriter() = default;
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;
  ~AtomicFileWriter();

  // Throws ptqkit::Error (kIo) naming `path` when its folder is missing or not writable.
  void Stage(const std::string& path, std::string_view bytes);
  // The same in steps, for outputs too large to hold twice: Open(), Append() or write to fd(),
  // then Finish(). REQUIRES: Open() succeeded before Append/fd/Finish.
  void Open(const std::string& path);
  void Append(std::string_view bytes);
  int fd() const { return fd_; }
  uint64_t size() const { return size_; }
  void Finish();
  // REQUIRES: Stage() succeeded, or nothing was staged (then Commit does nothing).
  void Commit();

 private:
  std::string final_path_;
  std::string temp_path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// Stage + Commit of one file, for callers that write a single output.
void WriteFileAtomically(const std::string& path, std::string_view bytes);

}  // namespace ptqkit
