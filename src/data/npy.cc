#include "data/npy.h"

#include <fmt/format.h>

#include <cstring>
#include <fstream>

#include "data/file_reader.h"
#include "data/npy_header.h"
#include "ptqkit/error.h"

namespace ptqkit::data {
namespace {

NpyHeader ReadHeader(const FileReader& file) {
  const std::string preamble = file.ReadUpTo(0, kNpyPreambleBytes);
  const int64_t header_size = NpyHeaderSize(preamble, file.path());
  if (header_size > file.size()) {
    throw Error(fmt::format("{}: truncated: header says it is {} bytes, the file has {}",
                            file.path(), header_size, file.size()));
  }
  NpyHeader header = ParseNpyHeader(file.ReadUpTo(0, header_size), file.path());
  const int64_t available = file.size() - header.header_bytes;
  if (available < header.DataBytes()) {
    throw Error(fmt::format("{}: truncated: header says {} {} ({} data bytes), the file holds {}",
                            file.path(), DataTypeName(header.dtype), ShapeToString(header.shape),
                            header.DataBytes(), available));
  }
  return header;
}

void CheckTensorBytes(const HostTensor& tensor) {
  const int64_t expected = tensor.NumElements() * static_cast<int64_t>(ElementSize(tensor.dtype));
  if (static_cast<int64_t>(tensor.bytes.size()) != expected) {
    throw Error(fmt::format("internal: tensor of {} {} holds {} bytes, expected {}",
                            DataTypeName(tensor.dtype), ShapeToString(tensor.shape),
                            tensor.bytes.size(), expected));
  }
}

}  // namespace

std::shared_ptr<const ArraySource> OpenNpy(const std::string& path) {
  const FileReader file(path);
  NpyHeader header = ReadHeader(file);
  return std::make_shared<FileArraySource>(header.dtype, std::move(header.shape), path, path,
                                           header.header_bytes);
}

HostTensor ReadNpy(const std::string& path) {
  const FileReader file(path);
  const NpyHeader header = ReadHeader(file);
  HostTensor out(header.dtype, header.shape);
  file.Read(header.header_bytes, header.DataBytes(), out.bytes.data(), "array data");
  return out;
}

HostTensor DecodeNpy(std::string_view bytes, const std::string& source) {
  const int64_t header_size = NpyHeaderSize(bytes.substr(0, kNpyPreambleBytes), source);
  if (header_size > static_cast<int64_t>(bytes.size())) {
    throw Error(fmt::format("{}: truncated: header says it is {} bytes, the array holds {}", source,
                            header_size, bytes.size()));
  }
  const NpyHeader header =
      ParseNpyHeader(bytes.substr(0, static_cast<size_t>(header_size)), source);
  const int64_t available = static_cast<int64_t>(bytes.size()) - header.header_bytes;
  if (available < header.DataBytes()) {
    throw Error(fmt::format("{}: truncated: header says {} {} ({} data bytes), the array holds {}",
                            source, DataTypeName(header.dtype), ShapeToString(header.shape),
                            header.DataBytes(), available));
  }
  HostTensor out(header.dtype, header.shape);
  if (!out.bytes.empty())
    std::memcpy(out.bytes.data(), bytes.data() + header.header_bytes, out.bytes.size());
  return out;
}

std::string EncodeNpy(const HostTensor& tensor, int version) {
  CheckTensorBytes(tensor);
  std::string out = EncodeNpyHeader(tensor.dtype, tensor.shape, version);
  out.append(reinterpret_cast<const char*>(tensor.bytes.data()), tensor.bytes.size());
  return out;
}

void WriteNpy(const std::string& path, const HostTensor& tensor, int version) {
  CheckTensorBytes(tensor);
  const std::string header = EncodeNpyHeader(tensor.dtype, tensor.shape, version);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error(fmt::format("{}: cannot open for writing", path), Error::Kind::kIo);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(reinterpret_cast<const char*>(tensor.bytes.data()),
            static_cast<std::streamsize>(tensor.bytes.size()));
  out.close();
  if (!out) throw Error(fmt::format("{}: write failed", path), Error::Kind::kIo);
}

}  // namespace ptqkit::data
