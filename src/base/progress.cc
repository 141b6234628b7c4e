#include "base/progress.h"

#include <utility>

namespace ptqkit::progress {
namespace {

Sink& CurrentSink() {
  static Sink sink;
  return sink;
}

}  // namespace

Sink SetSink(Sink sink) { return std::exchange(CurrentSink(), std::move(sink)); }

Stage::Stage(std::string name, std::string unit, int64_t total)
    : name_(std::move(name)), unit_(std::move(unit)), total_(total), start_(std::chrono::steady_clock::now()) {
  Emit(false);
}

Stage::~Stage() { Emit(true); }

void Stage::Set(int64_t done, std::string detail) {
  done_ = done;
  detail_ = std::move(detail);
  Emit(false);
}

void Stage::Emit(bool finished) {
  const Sink& sink = CurrentSink();
  if (!sink) return;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  try {
    sink(Update{&name_, &unit_, done_, total_, &detail_, elapsed, finished});
  } catch (...) {
    // Progress never fails a run (and a destructor must not throw).
  }
}

}  // namespace ptqkit::progress
