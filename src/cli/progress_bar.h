// ProgressBar: a one-line "[#####.....] 12/40 batches" on stderr, redrawn in place — only when
// stderr is a terminal, so logs and pipes stay clean.
#pragma once

#include <cstdint>
#include <string>

namespace ptqkit::cli {

class ProgressBar {
 public:
  explicit ProgressBar(std::string label);
  ~ProgressBar();  // ends the line if anything was drawn
  void Update(int64_t done, int64_t total);

 private:
  std::string label_;
  bool enabled_;
  bool drawn_ = false;
};

}  // namespace ptqkit::cli
