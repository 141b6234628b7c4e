#include "base/log.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <mutex>

#include "ptqkit/error.h"

namespace ptqkit::log {
namespace {

std::mutex g_mutex;
std::atomic<Level> g_level{Level::kInfo};
std::atomic<int> g_warnings{0};
std::ofstream* g_file = nullptr;
Sink g_sink;

const char* Tag(Level level) {
  switch (level) {
    case Level::kDebug: return "debug";
    case Level::kInfo: return "info";
    case Level::kWarning: return "warning";
    case Level::kError: return "error";
  }
  return "?";
}

}  // namespace

Level ParseLevel(std::string_view name) {
  std::string upper(name);
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
  if (upper == "DEBUG") return Level::kDebug;
  if (upper == "INFO") return Level::kInfo;
  if (upper == "WARNING" || upper == "WARN") return Level::kWarning;
  if (upper == "ERROR") return Level::kError;
  throw Error(fmt::format("--log_level: unknown level '{}' (expected DEBUG, INFO, WARNING or ERROR)", name));
}

void SetLevel(Level level) { g_level = level; }
Level GetLevel() { return g_level; }

void SetFile(const std::string& path) {
  std::lock_guard<std::mutex> lock(g_mutex);
  delete g_file;
  g_file = nullptr;
  if (path.empty()) return;
  auto* file = new std::ofstream(path, std::ios::app);
  if (!*file) {
    delete file;
    throw Error(fmt::format("--log_file: cannot open '{}' for writing", path), Error::Kind::kIo);
  }
  g_file = file;
}

void Write(Level level, std::string_view message) {
  if (level == Level::kWarning) ++g_warnings;
  if (level < g_level) return;
  Sink sink;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_file) *g_file << "[" << Tag(level) << "] " << message << "\n" << std::flush;
    if (!g_sink) {
      std::fprintf(stderr, "[ptqkit %s] %.*s\n", Tag(level), static_cast<int>(message.size()), message.data());
      return;
    }
    sink = g_sink;
  }
  sink(level, message);  // outside the lock: a sink may take other locks (Python's GIL)
}

void SetSink(Sink sink) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_sink = std::move(sink);
}

int WarningCount() { return g_warnings; }

}  // namespace ptqkit::log
