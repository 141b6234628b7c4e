#include "base/memory_limit.h"

#include <fmt/format.h>
#include <unistd.h>

#include <limits>

#include "ptqkit/error.h"

namespace ptqkit {

std::optional<int64_t> CheckedMul(int64_t a, int64_t b) {
  if (a < 0 || b < 0) return std::nullopt;
  int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

std::optional<int64_t> CheckedBytes(const std::vector<int64_t>& dims, int64_t elem_size) {
  std::optional<int64_t> bytes = elem_size;
  for (int64_t d : dims) {
    if (!bytes) break;
    bytes = CheckedMul(*bytes, d);
  }
  return bytes;
}

int64_t PhysicalMemoryBytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return std::numeric_limits<int64_t>::max();
  return static_cast<int64_t>(pages) * page;
}

std::string HumanBytes(double bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int unit = 0;
  while (bytes >= 1024.0 && unit < 6) {
    bytes /= 1024.0;
    ++unit;
  }
  return unit == 0 ? fmt::format("{:.0f} B", bytes) : fmt::format("{:.1f} {}", bytes, kUnits[unit]);
}

void RequireMemory(std::optional<int64_t> bytes, std::string_view what) {
  const int64_t limit = PhysicalMemoryBytes();
  if (!bytes) {
    throw Error(fmt::format("{} needs more than {} bytes (the size overflows), more than this machine's memory ({})",
                            what, std::numeric_limits<int64_t>::max(), HumanBytes(static_cast<double>(limit))));
  }
  if (*bytes > limit) {
    throw Error(fmt::format("{} needs {}, more than this machine's memory ({})", what,
                            HumanBytes(static_cast<double>(*bytes)), HumanBytes(static_cast<double>(limit))));
  }
}

}  // namespace ptqkit
