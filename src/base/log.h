// A tiny leveled logger shared by every stage. Messages go to stderr, or to a sink set by an
// embedding program (and to a log file when the CLI's --log_file is set). Warnings are also counted so a run can summarise them at the end.
// Thread-safe: one mutex around the sinks.
#pragma once

#include <fmt/format.h>

#include <functional>
#include <string>
#include <string_view>

namespace ptqkit::log {

enum class Level { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// REQUIRES: name is one of DEBUG, INFO, WARNING, ERROR (any case). Throws ptqkit::Error otherwise.
Level ParseLevel(std::string_view name);
void SetLevel(Level level);
Level GetLevel();
// Also append every message (at any enabled level) to this file; empty path closes it.
void SetFile(const std::string& path);
void Write(Level level, std::string_view message);
// Sends enabled messages to `sink` instead of stderr (the Python binding forwards them to the
// `logging` module); an empty function restores stderr. The log file, if any, still gets them.
using Sink = std::function<void(Level, std::string_view)>;
void SetSink(Sink sink);
int WarningCount();

template <typename... Args>
void Debug(fmt::format_string<Args...> f, Args&&... args) {
  if (GetLevel() <= Level::kDebug) Write(Level::kDebug, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void Info(fmt::format_string<Args...> f, Args&&... args) {
  if (GetLevel() <= Level::kInfo) Write(Level::kInfo, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void Warn(fmt::format_string<Args...> f, Args&&... args) {
  Write(Level::kWarning, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace ptqkit::log
