// Digest: a streaming 64-bit content hash, shown as 16 hex digits. Shard parts record digests of
// the model, the calibration data and the calibration table so that a merge can tell parts of
// different runs apart; it detects accidental mismatches (another file, other data), it is not a
// cryptographic hash and defends against nothing deliberate.
//
// FNV-1a applied to 8-byte words (a multiply per word, not per byte, so hashing runs at memory
// speed on multi-GiB weights); the tail and the total length are folded in at the end, and every
// Update() call is also separated by its length, so ("ab","c") and ("a","bc") differ.
// A value type; not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ptqkit {

class Digest {
 public:
  void Update(const void* data, size_t size);
  void Update(std::string_view text) { Update(text.data(), text.size()); }
  // 16 lower-case hex digits.
  std::string Hex() const;

 private:
  uint64_t state_ = 0xcbf29ce484222325ull;  // the FNV-1a 64 offset basis
  uint64_t length_ = 0;
};

}  // namespace ptqkit
