// TemporaryFolder: a fresh private folder under the system's temporary directory ($TMPDIR or
// /tmp), removed with everything in it when the object goes out of scope (also on exceptions).
// For intermediate files that another program must read by path (the accuracy-budget scorer).
#pragma once

#include <string>

namespace ptqkit {

class TemporaryFolder {
 public:
  // Throws ptqkit::Error (kIo) when the folder cannot be created.
  explicit TemporaryFolder(const std::string& prefix);
  ~TemporaryFolder();
  TemporaryFolder(const TemporaryFolder&) = delete;
  TemporaryFolder& operator=(const TemporaryFolder&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace ptqkit
