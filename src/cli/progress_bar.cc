#include "cli/progress_bar.h"

#include <unistd.h>

#include <cstdio>

namespace ptqkit::cli {

ProgressBar::ProgressBar(std::string label) : label_(std::move(label)), enabled_(::isatty(STDERR_FILENO) == 1) {}

ProgressBar::~ProgressBar() {
  if (drawn_) std::fputc('\n', stderr);
}

void ProgressBar::Update(int64_t done, int64_t total) {
  if (!enabled_ || total <= 0) return;
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(kWidth * done / total);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.append(static_cast<size_t>(kWidth - filled), '.');
  std::fprintf(stderr, "\r%s [%s] %lld/%lld", label_.c_str(), bar.c_str(), static_cast<long long>(done),
               static_cast<long long>(total));
  std::fflush(stderr);
  drawn_ = true;
}

}  // namespace ptqkit::cli
