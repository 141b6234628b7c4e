// Progress of long stages (calibration batches, the FP32 reference, sensitivity probes, budget and
// autotune searches), reported to one process-wide sink. The library reports; the CLI decides how
// to show it (cli/progress_bar.h: a bar on a terminal, a line every ~10 s otherwise). Without a
// sink, reporting costs a branch. The sink is called on the thread that reports; stages are not
// nested across threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace ptqkit::progress {

struct Update {
  const std::string* stage;   // "calibrating", "FP32 reference", "probing", ...
  const std::string* unit;    // what `done` and `total` count: "batches", "targets", ...
  int64_t done = 0;
  int64_t total = 0;
  const std::string* detail;  // more context, e.g. "samples 64-127 of 500; 12 targets sampling"; may be empty
  double elapsed_s = 0.0;     // since the stage began
  bool finished = false;      // the stage ended (its last update)
};

using Sink = std::function<void(const Update&)>;

// nullptr: progress is not reported. Returns the previous sink.
Sink SetSink(Sink sink);

// One stage, reported while it lives; its destructor reports it finished.
class Stage {
 public:
  Stage(std::string name, std::string unit, int64_t total);
  ~Stage();
  Stage(const Stage&) = delete;
  Stage& operator=(const Stage&) = delete;

  void Set(int64_t done, std::string detail = "");
  void SetTotal(int64_t total) { total_ = total; }

 private:
  void Emit(bool finished);

  std::string name_, unit_, detail_;
  int64_t done_ = 0, total_ = 0;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace ptqkit::progress
