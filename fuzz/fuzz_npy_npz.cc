// libFuzzer harness: the calibration data readers. The first byte picks the reader: .npy from
// memory (DecodeNpy), .npy from a file (OpenNpy + every row), .npz (OpenNpz + every row of every
// member, which inflates deflated ones, and ReadNpz). Rejections must be ptqkit::Error; a header
// may claim any size, so no allocation may follow a size that the file does not back.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "data/npy.h"
#include "data/npz.h"
#include "fuzz_util.h"
#include "ptqkit/error.h"

namespace {

void ReadAllRows(const ptqkit::data::ArraySource& source) {
  // Row by row, so a lying shape can never make one read larger than the file backs.
  for (int64_t r = 0; r < source.rows() && r < 64; ++r) (void)source.ReadRows(r, r + 1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0] % 3;
  ++data;
  --size;
  try {
    if (mode == 0) {
      (void)ptqkit::data::DecodeNpy(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.npy");
    } else if (mode == 1) {
      const std::string path = ptqkit::fuzz::WriteScratch(data, size, ".npy");
      ReadAllRows(*ptqkit::data::OpenNpy(path));
    } else {
      const std::string path = ptqkit::fuzz::WriteScratch(data, size, ".npz");
      for (const auto& [key, source] : ptqkit::data::OpenNpz(path)) ReadAllRows(*source);
      (void)ptqkit::data::ReadNpz(path);
    }
  } catch (const ptqkit::Error&) {
  }
  return 0;
}
