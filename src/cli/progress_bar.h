// How progress is shown. On a terminal: one line "calibrating [#####.....] 12/40 batches, ETA 1m05s"
// redrawn in place. Otherwise (a pipe, a log file, CI): a plain line
// "ptqkit: probing: 12/40 targets (30%), samples 64-127 of 500; 1m02s elapsed, ETA 2m25s"
// every ~10 s or 5 % step, whichever comes first (but not more than one a second), so a long run
// shows it is alive; stages shorter than the interval print nothing. PTQKIT_PROGRESS_INTERVAL_S
// sets the interval (0: a line per update).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "base/progress.h"

namespace ptqkit::cli {

class ProgressBar {
 public:
  explicit ProgressBar(std::string label, std::string unit = "");
  ~ProgressBar();  // ends the line if anything was drawn
  void Update(int64_t done, int64_t total, const std::string& detail = "");

 private:
  void Draw(int64_t done, int64_t total, const std::string& detail, double elapsed, double eta);
  void PrintLine(int64_t done, int64_t total, const std::string& detail, double elapsed, double eta);

  std::string label_, unit_;
  bool terminal_;
  bool drawn_ = false;
  double interval_s_;
  std::chrono::steady_clock::time_point start_;
  double last_line_s_ = 0.0;
  int64_t last_step_ = 0;  // 5 % steps printed so far
};

// Installs the process-wide sink (base/progress.h) that shows every stage with a ProgressBar;
// uninstalls it when destroyed.
class ProgressDisplay {
 public:
  ProgressDisplay();
  ~ProgressDisplay();

 private:
  std::unique_ptr<ProgressBar> bar_;
  std::string stage_;
};

// "45s", "3m05s", "1h02m".
std::string FormatDuration(double seconds);

}  // namespace ptqkit::cli
