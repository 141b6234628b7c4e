// Shared by the libFuzzer harnesses: the readers under test take paths (they open files the way
// ptqkit does, regular files only), so each input is written to one scratch file per process.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace ptqkit::fuzz {

inline std::string ScratchFile(const char* suffix) {
  return std::string("/tmp/ptqkit-fuzz-") + std::to_string(::getpid()) + suffix;
}

inline std::string WriteScratch(const uint8_t* data, size_t size, const char* suffix) {
  const std::string path = ScratchFile(suffix);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f) {
    if (size) std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  return path;
}

}  // namespace ptqkit::fuzz
