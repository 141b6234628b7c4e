#include "base/digest.h"

#include <fmt/format.h>

#include <cstring>

namespace ptqkit {
namespace {

constexpr uint64_t kPrime = 0x100000001b3ull;  // the FNV-1a 64 prime

uint64_t Mix(uint64_t state, uint64_t word) { return (state ^ word) * kPrime; }

}  // namespace

void Digest::Update(const void* data, size_t size) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    uint64_t word;
    std::memcpy(&word, bytes + i, 8);
    state_ = Mix(state_, word);
  }
  uint64_t tail = 0;
  std::memcpy(&tail, bytes + i, size - i);
  state_ = Mix(Mix(state_, tail), size);  // the size separates consecutive updates
  length_ += size;
}

std::string Digest::Hex() const {
  // A final avalanche (splitmix64's) so that nearby inputs give unrelated-looking digests.
  uint64_t h = Mix(state_, length_);
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  return fmt::format("{:016x}", h);
}

}  // namespace ptqkit
