#include "data/run_digests.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/digest.h"
#include "data/file_reader.h"

namespace ptqkit {
namespace {

void AddFile(const std::string& path, Digest* digest) {
  const data::FileReader file(path);
  constexpr int64_t kChunk = 8 << 20;
  std::vector<std::byte> buffer(static_cast<size_t>(std::min<int64_t>(kChunk, std::max<int64_t>(file.size(), 1))));
  for (int64_t offset = 0; offset < file.size(); offset += kChunk) {
    const int64_t n = std::min(kChunk, file.size() - offset);
    file.Read(offset, n, buffer.data(), "bytes to digest");
    digest->Update(buffer.data(), static_cast<size_t>(n));
  }
}

}  // namespace

std::string FileDigest(const std::string& path) {
  Digest digest;
  AddFile(path, &digest);
  return digest.Hex();
}

std::string ModelDigest(const std::string& path, const onnx::ModelProto& loaded) {
  Digest digest;
  AddFile(path, &digest);
  for (const auto& t : loaded.graph().initializer()) {
    digest.Update(t.name());
    digest.Update(t.raw_data());
  }
  return digest.Hex();
}

std::string DataDigest(const CalibrationSet& set) {
  constexpr int64_t kBatch = 64;  // any fixed size: only the order of the bytes must not vary
  Digest digest;
  for (int64_t b = 0; b < set.NumBatches(kBatch); ++b) {
    for (const auto& [name, t] : set.ReadBatch(b, kBatch)) {
      digest.Update(name);
      digest.Update(DataTypeName(t.dtype));
      digest.Update(ShapeToString(t.shape));
      digest.Update(t.bytes.data(), t.bytes.size());
    }
  }
  return digest.Hex();
}

}  // namespace ptqkit
