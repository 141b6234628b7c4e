// Size checks before allocating: a file header or a model can declare any size, and allocating it
// first means std::bad_alloc (or the OOM killer) instead of a message. Callers compute the bytes
// with overflow checks (CheckedBytes) and call RequireMemory, which refuses sizes larger than
// the machine's physical memory, naming what wanted it.
// Free functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ptqkit {

// elem_size x product of dims, or nullopt when a dim is negative or the product overflows int64.
std::optional<int64_t> CheckedBytes(const std::vector<int64_t>& dims, int64_t elem_size);
// a x b, or nullopt on overflow or a negative factor.
std::optional<int64_t> CheckedMul(int64_t a, int64_t b);

// Physical memory of this machine in bytes (sysconf), or a large value when unknown.
int64_t PhysicalMemoryBytes();

// "4.0 GiB", "512 B", "16.0 EiB".
std::string HumanBytes(double bytes);

// Throws ptqkit::Error "<what> needs <size>, more than this machine's memory (<size>)" when
// `bytes` is nullopt (overflowed) or above PhysicalMemoryBytes().
void RequireMemory(std::optional<int64_t> bytes, std::string_view what);

}  // namespace ptqkit
