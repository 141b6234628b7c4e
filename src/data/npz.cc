#include "data/npz.h"

#include <fmt/format.h>
#include <minizip/unzip.h>
#include <minizip/zip.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <mutex>
#include <vector>

#include "base/input_file.h"
#include "base/memory_limit.h"
#include "data/npy.h"
#include "data/npy_header.h"
#include "ptqkit/error.h"

namespace ptqkit::data {
namespace {

constexpr std::string_view kNpySuffix = ".npy";
// unzReadCurrentFile and zipWriteInFileInZip take unsigned counts; stay well inside them.
constexpr int64_t kChunkBytes = int64_t{1} << 30;

struct UnzCloser {
  void operator()(void* file) const { unzClose(file); }
};
using UnzHandle = std::unique_ptr<void, UnzCloser>;

struct ZipCloser {
  void operator()(void* file) const { zipClose(file, nullptr); }
};
using ZipHandle = std::unique_ptr<void, ZipCloser>;

struct Member {
  std::string key;     // name without ".npy"
  std::string origin;  // "archive.npz:key" for messages
  unz_file_info64 info;
};

[[noreturn]] void CorruptMember(const std::string& origin, std::string_view what) {
  throw Error(fmt::format("{}: corrupt .npz member: {}", origin, what));
}

// Reads `count` bytes of the open member into `out`.
void ReadOpenMember(unzFile zip, const std::string& origin, int64_t count, char* out) {
  int64_t done = 0;
  while (done < count) {
    const int n = unzReadCurrentFile(zip, out + done,
                                     static_cast<unsigned>(std::min(kChunkBytes, count - done)));
    if (n < 0) CorruptMember(origin, fmt::format("read failed (minizip error {})", n));
    if (n == 0) CorruptMember(origin, fmt::format("ends after {} of {} bytes", done, count));
    done += n;
  }
}

// Deflate cannot expand data more than about 1032:1 (RFC 1951: a 258-byte match costs at least
// 2 bits); a directory entry that claims more lies about its size, and is refused before anything
// is allocated or inflated.
constexpr uint64_t kMaxDeflateRatio = 1032;

void CheckMemberSize(const Member& member) {
  const uint64_t size = member.info.uncompressed_size;
  if (size > static_cast<ZPOS64_T>(std::numeric_limits<int64_t>::max())) CorruptMember(member.origin, "impossible size");
  if (member.info.compression_method == Z_DEFLATED &&
      size / kMaxDeflateRatio > member.info.compressed_size + 1) {
    CorruptMember(member.origin, fmt::format("it claims {} bytes inflated from {} compressed, beyond deflate's "
                                             "1032:1 limit (a zip bomb or a corrupt directory)",
                                             size, member.info.compressed_size));
  }
  RequireMemory(static_cast<int64_t>(size), fmt::format("inflating {}", member.origin));
}

// The whole member, decompressed and CRC-checked.
std::string ReadWholeMember(unzFile zip, const Member& member) {
  CheckMemberSize(member);
  if (unzOpenCurrentFile(zip) != UNZ_OK) CorruptMember(member.origin, "cannot open the member");
  std::string bytes(static_cast<size_t>(member.info.uncompressed_size), '\0');
  ReadOpenMember(zip, member.origin, static_cast<int64_t>(bytes.size()), bytes.data());
  const int closed = unzCloseCurrentFile(zip);
  if (closed == UNZ_CRCERROR) CorruptMember(member.origin, "CRC mismatch");
  if (closed != UNZ_OK) CorruptMember(member.origin, fmt::format("minizip error {}", closed));
  return bytes;
}

// For a stored member: the array's header and the file offset of its first data byte, found
// without reading the data.
std::shared_ptr<const ArraySource> OpenStoredMember(unzFile zip, const Member& member,
                                                    const std::string& path) {
  if (member.info.compressed_size != member.info.uncompressed_size) {
    CorruptMember(member.origin, "stored member with compressed size != uncompressed size");
  }
  const auto size = static_cast<int64_t>(member.info.uncompressed_size);
  if (unzOpenCurrentFile(zip) != UNZ_OK) CorruptMember(member.origin, "cannot open the member");
  // Must be taken before reading: minizip advances it as the member is consumed.
  const auto member_offset = static_cast<int64_t>(unzGetCurrentFileZStreamPos64(zip));
  std::string header_bytes(static_cast<size_t>(std::min<int64_t>(size, kNpyPreambleBytes)), '\0');
  ReadOpenMember(zip, member.origin, static_cast<int64_t>(header_bytes.size()),
                 header_bytes.data());
  const int64_t header_size = NpyHeaderSize(header_bytes, member.origin);
  if (header_size > size) {
    throw Error(fmt::format("{}: truncated: header says it is {} bytes, the member has {}",
                            member.origin, header_size, size));
  }
  const size_t preamble = header_bytes.size();
  header_bytes.resize(static_cast<size_t>(header_size));
  ReadOpenMember(zip, member.origin, header_size - static_cast<int64_t>(preamble),
                 header_bytes.data() + preamble);
  unzCloseCurrentFile(zip);  // partial read: minizip skips the CRC check, nothing to report

  NpyHeader header = ParseNpyHeader(header_bytes, member.origin);
  if (size - header.header_bytes < header.DataBytes()) {
    throw Error(fmt::format("{}: truncated: header says {} {} ({} data bytes), the member holds {}",
                            member.origin, DataTypeName(header.dtype), ShapeToString(header.shape),
                            header.DataBytes(), size - header.header_bytes));
  }
  std::error_code ec;
  const auto file_size = static_cast<int64_t>(std::filesystem::file_size(path, ec));
  if (ec) throw Error(fmt::format("{}: cannot stat: {}", path, ec.message()), Error::Kind::kIo);
  if (member_offset + header.header_bytes + header.DataBytes() > file_size) {
    throw Error(
        fmt::format("{}: truncated: the archive ends before the member's data", member.origin));
  }
  return std::make_shared<FileArraySource>(header.dtype, std::move(header.shape), member.origin,
                                           path, member_offset + header.header_bytes);
}

// The .npy header at the start of the open member (stored or deflated: only the header's bytes are
// read, or inflated). Leaves the member closed.
NpyHeader ReadMemberHeader(unzFile zip, const Member& member) {
  const auto size = static_cast<int64_t>(member.info.uncompressed_size);
  if (unzOpenCurrentFile(zip) != UNZ_OK) CorruptMember(member.origin, "cannot open the member");
  std::string header_bytes(static_cast<size_t>(std::min<int64_t>(size, kNpyPreambleBytes)), '\0');
  ReadOpenMember(zip, member.origin, static_cast<int64_t>(header_bytes.size()), header_bytes.data());
  const int64_t header_size = NpyHeaderSize(header_bytes, member.origin);
  if (header_size > size) {
    throw Error(fmt::format("{}: truncated: header says it is {} bytes, the member has {}", member.origin, header_size,
                            size));
  }
  const size_t preamble = header_bytes.size();
  header_bytes.resize(static_cast<size_t>(header_size));
  ReadOpenMember(zip, member.origin, header_size - static_cast<int64_t>(preamble), header_bytes.data() + preamble);
  unzCloseCurrentFile(zip);
  return ParseNpyHeader(header_bytes, member.origin);
}

// A deflated member (np.savez_compressed): its header is read when the archive is opened, its data
// inflated on the first read only. Inputs the model does not take are never inflated, so a huge
// member under an unused key costs nothing; what is inflated is CRC-checked.
class DeflatedMemberSource final : public ArraySource {
 public:
  DeflatedMemberSource(NpyHeader header, std::string origin, std::string path, std::string member_name)
      : ArraySource(header.dtype, header.shape, origin),
        path_(std::move(path)),
        member_name_(std::move(member_name)),
        declared_shape_(header.shape) {}

  void ReadRows(int64_t begin, int64_t end, std::byte* out) const override {
    std::call_once(once_, [&] { Inflate(); });
    tensor_->ReadRows(begin, end, out);
  }
  using ArraySource::ReadRows;

 private:
  void Inflate() const {
    UnzHandle handle(unzOpen64(path_.c_str()));
    if (!handle || unzLocateFile(handle.get(), member_name_.c_str(), 1) != UNZ_OK) {
      throw Error(fmt::format("{}: the archive changed while ptqkit was reading it", origin()), Error::Kind::kIo);
    }
    Member member;
    member.origin = origin();
    if (unzGetCurrentFileInfo64(handle.get(), &member.info, nullptr, 0, nullptr, 0, nullptr, 0) != UNZ_OK) {
      CorruptMember(origin(), "cannot read its directory entry");
    }
    HostTensor tensor = DecodeNpy(ReadWholeMember(handle.get(), member), origin());
    if (tensor.shape != declared_shape_ && !(declared_shape_.empty() && tensor.shape.empty())) {
      throw Error(fmt::format("{}: the archive changed while ptqkit was reading it", origin()), Error::Kind::kIo);
    }
    if (tensor.shape.empty()) tensor.shape = {1};  // a scalar is served as one row
    tensor_ = std::make_unique<MemoryArraySource>(std::move(tensor), origin());
  }

  std::string path_;
  std::string member_name_;
  std::vector<int64_t> declared_shape_;
  mutable std::once_flag once_;
  mutable std::unique_ptr<MemoryArraySource> tensor_;
};

// Opens the archive and calls visit(zip, member) for every .npy member, rejecting anything that is
// not one. Directory entries (names ending in '/') are skipped.
template <typename Visit>
void ForEachMember(const std::string& path, Visit visit) {
  RequireRegularFile(path, "calibration data");  // a pipe or device is refused before minizip opens it
  UnzHandle handle(unzOpen64(path.c_str()));
  if (!handle) {
    // minizip refuses a zip with no entries, which is just an end-of-central-directory record.
    std::string start(4, '\0');
    std::ifstream(path, std::ios::binary).read(start.data(), 4);
    if (start == "PK\x05\x06") throw Error(fmt::format("{}: archive holds no arrays", path));
    throw Error(
        fmt::format("{}: not a zip archive (or a corrupt one); an .npz must be a zip", path));
  }
  unzFile zip = handle.get();
  int count = 0;
  std::vector<char> name(65536 + 1);
  for (int status = unzGoToFirstFile(zip); status != UNZ_END_OF_LIST_OF_FILE;
       status = unzGoToNextFile(zip)) {
    if (status != UNZ_OK)
      throw Error(fmt::format("{}: corrupt zip directory (minizip error {})", path, status));
    Member member;
    if (unzGetCurrentFileInfo64(zip, &member.info, name.data(), static_cast<uLong>(name.size() - 1),
                                nullptr, 0, nullptr, 0) != UNZ_OK) {
      throw Error(fmt::format("{}: corrupt zip directory entry", path));
    }
    const std::string member_name(name.data(),
                                  std::min<size_t>(member.info.size_filename, name.size() - 1));
    if (!member_name.empty() && member_name.back() == '/') continue;
    if (member_name.size() <= kNpySuffix.size() || !member_name.ends_with(kNpySuffix)) {
      throw Error(fmt::format("{}: member '{}' is not an .npy array", path, member_name));
    }
    member.key = member_name.substr(0, member_name.size() - kNpySuffix.size());
    member.origin = fmt::format("{}:{}", path, member.key);
    if (member.info.flag & 1) {
      throw Error(fmt::format("{}: member is encrypted", member.origin), Error::Kind::kUnsupported);
    }
    if (member.info.compression_method != 0 && member.info.compression_method != Z_DEFLATED) {
      throw Error(
          fmt::format("{}: unsupported zip compression method {} (expected stored or deflate)",
                      member.origin, member.info.compression_method),
          Error::Kind::kUnsupported);
    }
    visit(zip, member);
    ++count;
  }
  if (count == 0) throw Error(fmt::format("{}: archive holds no arrays", path));
}

}  // namespace

std::map<std::string, std::shared_ptr<const ArraySource>> OpenNpz(const std::string& path) {
  std::map<std::string, std::shared_ptr<const ArraySource>> out;
  ForEachMember(path, [&](unzFile zip, const Member& member) {
    std::shared_ptr<const ArraySource> source;
    if (member.info.compression_method == 0) {
      source = OpenStoredMember(zip, member, path);
    } else {
      CheckMemberSize(member);
      NpyHeader header = ReadMemberHeader(zip, member);
      const int64_t declared = static_cast<int64_t>(member.info.uncompressed_size) - header.header_bytes;
      if (declared != header.DataBytes()) {
        throw Error(fmt::format("{}: header says {} {} ({} data bytes), the member holds {}", member.origin,
                                DataTypeName(header.dtype), ShapeToString(header.shape), header.DataBytes(), declared));
      }
      source = std::make_shared<DeflatedMemberSource>(std::move(header), member.origin, path, member.key + ".npy");
    }
    if (!out.emplace(member.key, std::move(source)).second) {
      throw Error(fmt::format("{}: array '{}' appears twice", path, member.key));
    }
  });
  return out;
}

std::map<std::string, HostTensor> ReadNpz(const std::string& path) {
  std::map<std::string, HostTensor> out;
  ForEachMember(path, [&](unzFile zip, const Member& member) {
    if (!out.emplace(member.key, DecodeNpy(ReadWholeMember(zip, member), member.origin)).second) {
      throw Error(fmt::format("{}: array '{}' appears twice", path, member.key));
    }
  });
  return out;
}

void WriteNpz(const std::string& path, const std::map<std::string, HostTensor>& arrays,
              NpzCompression compression) {
  ZipHandle handle(zipOpen64(path.c_str(), APPEND_STATUS_CREATE));
  if (!handle) throw Error(fmt::format("{}: cannot open for writing", path), Error::Kind::kIo);
  zipFile zip = handle.get();
  for (const auto& [key, tensor] : arrays) {
    if (key.empty()) throw Error(fmt::format("internal: {}: empty array name", path));
    const std::string image = EncodeNpy(tensor);
    zip_fileinfo info{};
    info.tmz_date.tm_year = 1980;  // the zip epoch; a fixed date keeps archives reproducible
    info.tmz_date.tm_mday = 1;
    const bool deflate = compression == NpzCompression::kDeflated;
    const int zip64 = image.size() >= 0xffffffffu ? 1 : 0;
    const std::string member = key + std::string(kNpySuffix);
    if (zipOpenNewFileInZip64(zip, member.c_str(), &info, nullptr, 0, nullptr, 0, nullptr,
                              deflate ? Z_DEFLATED : 0, deflate ? Z_DEFAULT_COMPRESSION : 0,
                              zip64) != ZIP_OK) {
      throw Error(fmt::format("{}: cannot add member '{}'", path, member), Error::Kind::kIo);
    }
    for (size_t done = 0; done < image.size();) {
      const auto n = static_cast<unsigned>(std::min<size_t>(kChunkBytes, image.size() - done));
      if (zipWriteInFileInZip(zip, image.data() + done, n) != ZIP_OK) {
        throw Error(fmt::format("{}: write failed for member '{}'", path, member),
                    Error::Kind::kIo);
      }
      done += n;
    }
    if (zipCloseFileInZip(zip) != ZIP_OK) {
      throw Error(fmt::format("{}: write failed for member '{}'", path, member), Error::Kind::kIo);
    }
  }
  const int closed = zipClose(handle.release(), nullptr);
  if (closed != ZIP_OK) throw Error(fmt::format("{}: write failed", path), Error::Kind::kIo);
}

}  // namespace ptqkit::data
