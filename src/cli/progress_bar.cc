#include "cli/progress_bar.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace ptqkit::cli {
namespace {

constexpr double kDefaultIntervalS = 10.0;
constexpr int64_t kStepsPerRun = 20;  // a line at each 5 %

double IntervalFromEnvironment() {
  const char* text = std::getenv("PTQKIT_PROGRESS_INTERVAL_S");
  if (!text || !*text) return kDefaultIntervalS;
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  return (end && *end == '\0' && std::isfinite(v) && v >= 0.0) ? v : kDefaultIntervalS;
}

}  // namespace

std::string FormatDuration(double seconds) {
  const auto s = static_cast<int64_t>(std::llround(std::max(seconds, 0.0)));
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, s / 60 % 60);
}

ProgressBar::ProgressBar(std::string label, std::string unit)
    : label_(std::move(label)), unit_(std::move(unit)), terminal_(::isatty(STDERR_FILENO) == 1),
      interval_s_(IntervalFromEnvironment()), start_(std::chrono::steady_clock::now()) {}

ProgressBar::~ProgressBar() {
  if (drawn_) std::fputc('\n', stderr);
}

void ProgressBar::Update(int64_t done, int64_t total, const std::string& detail) {
  if (total <= 0) return;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double eta = done > 0 ? elapsed / static_cast<double>(done) * static_cast<double>(total - done) : -1.0;
  if (terminal_) {
    Draw(done, total, detail, elapsed, eta);
    return;
  }
  const int64_t step = done * kStepsPerRun / total;
  const double since_line = elapsed - last_line_s_;
  const bool due = since_line >= interval_s_ || (step > last_step_ && since_line >= interval_s_ / 10.0);
  if (!due || elapsed < interval_s_) return;
  PrintLine(done, total, detail, elapsed, eta);
  last_line_s_ = elapsed;
  last_step_ = step;
}

void ProgressBar::Draw(int64_t done, int64_t total, const std::string& detail, double elapsed, double eta) {
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(kWidth * std::min(done, total) / total);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.append(static_cast<size_t>(kWidth - filled), '.');
  std::string text = fmt::format("\r{} [{}] {}/{}{}", label_, bar, done, total, unit_.empty() ? "" : " " + unit_);
  if (!detail.empty()) text += ", " + detail;
  text += eta >= 0 && done < total ? ", ETA " + FormatDuration(eta) : ", " + FormatDuration(elapsed);
  std::fprintf(stderr, "%s\033[K", text.c_str());  // \033[K: clear what a longer line left
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressBar::PrintLine(int64_t done, int64_t total, const std::string& detail, double elapsed, double eta) {
  std::string text = fmt::format("ptqkit: {}: {}/{}{} ({}%)", label_, done, total, unit_.empty() ? "" : " " + unit_,
                                 done * 100 / total);
  if (!detail.empty()) text += ", " + detail;
  text += "; " + FormatDuration(elapsed) + " elapsed";
  if (eta >= 0 && done < total) text += ", ETA " + FormatDuration(eta);
  std::fprintf(stderr, "%s\n", text.c_str());
  std::fflush(stderr);
}

ProgressDisplay::ProgressDisplay() {
  progress::SetSink([this](const progress::Update& u) {
    if (u.finished) {
      if (*u.stage == stage_) bar_.reset();
      return;
    }
    if (!bar_ || *u.stage != stage_) {
      bar_.reset();  // ends the previous stage's line first
      bar_ = std::make_unique<ProgressBar>(*u.stage, *u.unit);
      stage_ = *u.stage;
    }
    bar_->Update(u.done, u.total, *u.detail);
  });
}

ProgressDisplay::~ProgressDisplay() { progress::SetSink(nullptr); }

}  // namespace ptqkit::cli
