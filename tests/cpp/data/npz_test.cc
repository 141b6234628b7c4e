#include "data/npz.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <minizip/zip.h>

#include <filesystem>

#include "data/npy.h"
#include "numpy_fixtures.h"
#include "test_files.h"

namespace ptqkit::data {
namespace {

using testing::ErrorOf;
using ::testing::HasSubstr;
using testing::Iota;
using testing::MakeTensor;
using testing::ReadFileBytes;
using testing::TestDir;
using testing::Values;
using testing::WriteFileBytes;

// A zip with arbitrary members, for archives WriteNpz would refuse to make.
void WriteZip(const std::string& path,
              const std::vector<std::pair<std::string, std::string>>& members) {
  zipFile zip = zipOpen64(path.c_str(), APPEND_STATUS_CREATE);
  ASSERT_NE(zip, nullptr);
  for (const auto& [name, bytes] : members) {
    zip_fileinfo info{};
    ASSERT_EQ(
        zipOpenNewFileInZip64(zip, name.c_str(), &info, nullptr, 0, nullptr, 0, nullptr, 0, 0, 0),
        ZIP_OK);
    ASSERT_EQ(zipWriteInFileInZip(zip, bytes.data(), static_cast<unsigned>(bytes.size())), ZIP_OK);
    ASSERT_EQ(zipCloseFileInZip(zip), ZIP_OK);
  }
  ASSERT_EQ(zipClose(zip, nullptr), ZIP_OK);
}

std::map<std::string, HostTensor> SampleArrays() {
  std::map<std::string, HostTensor> arrays;
  arrays.emplace("images", Iota({6, 2, 3}, 100.f));
  arrays.emplace("ids", MakeTensor<int64_t>(DataType::kInt64, {6}, {5, 4, 3, 2, 1, 0}));
  arrays.emplace("half", MakeTensor<uint16_t>(DataType::kFloat16, {6, 1}, {1, 2, 3, 4, 5, 6}));
  return arrays;
}

void ExpectSame(const HostTensor& a, const HostTensor& b) {
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.shape, b.shape);
  EXPECT_EQ(a.bytes, b.bytes);
}

TEST(NpzTest, StoredMembersAreReadLazilyAndMatchEagerReads) {
  const std::string path = (TestDir() / "s.npz").string();
  const auto arrays = SampleArrays();
  WriteNpz(path, arrays, NpzCompression::kStored);

  const auto eager = ReadNpz(path);
  const auto lazy = OpenNpz(path);
  ASSERT_EQ(eager.size(), 3u);
  ASSERT_EQ(lazy.size(), 3u);
  for (const auto& [key, tensor] : arrays) {
    ExpectSame(eager.at(key), tensor);
    const ArraySource& source = *lazy.at(key);
    EXPECT_NE(dynamic_cast<const FileArraySource*>(&source), nullptr)
        << key << " should be read from disk";
    EXPECT_EQ(source.origin(), path + ":" + key);
    ExpectSame(source.ReadRows(0, source.rows()), tensor);
    ExpectSame(source.ReadRows(2, 5), SliceAxis0(tensor, 2, 5));
  }
}

TEST(NpzTest, StoredRowsComeFromTheArchiveAtTheirOffset) {
  const std::string path = (TestDir() / "s.npz").string();
  const HostTensor marker = MakeTensor<int64_t>(
      DataType::kInt64, {3}, {0x1111111111111111, 0x2222222222222222, 0x3333333333333333});
  WriteNpz(path, {{"m", marker}}, NpzCompression::kStored);
  const auto lazy = OpenNpz(path);

  // Patch the middle row inside the zip file: a lazy reader sees it, proving it reads by offset.
  std::string bytes = ReadFileBytes(path);
  const std::string row1(reinterpret_cast<const char*>(marker.bytes.data()) + 8, 8);
  const size_t at = bytes.find(row1);
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, 8, std::string(8, '\x7f'));
  WriteFileBytes(path, bytes);
  EXPECT_EQ(Values<int64_t>(lazy.at("m")->ReadRows(1, 2))[0], 0x7f7f7f7f7f7f7f7f);
  EXPECT_EQ(Values<int64_t>(lazy.at("m")->ReadRows(2, 3))[0], 0x3333333333333333);
}

// Deflated members are inflated on their first read (never for keys nobody reads), then served
// from memory.
TEST(NpzTest, DeflatedMembersAreInflatedOnce) {
  const std::string path = (TestDir() / "d.npz").string();
  const auto arrays = SampleArrays();
  WriteNpz(path, arrays, NpzCompression::kDeflated);
  const auto lazy = OpenNpz(path);
  for (const auto& [key, tensor] : arrays) {
    EXPECT_EQ(dynamic_cast<const FileArraySource*>(lazy.at(key).get()), nullptr) << key;
    ExpectSame(lazy.at(key)->ReadRows(1, 4), SliceAxis0(tensor, 1, 4));
    ExpectSame(ReadNpz(path).at(key), tensor);
  }
}

TEST(NpzTest, ReadsArchivesWrittenByNumpy) {
  const auto dir = TestDir();
  const HostTensor x = Iota({3, 2});
  const HostTensor mask = MakeTensor<int64_t>(DataType::kInt64, {3, 2}, {1, 2, 3, 4, 5, 6});
  const std::vector<std::pair<std::string, std::string>> files = {
      {"savez.npz", std::string(reinterpret_cast<const char*>(testing::kNumpySavez),
                                sizeof(testing::kNumpySavez))},
      {"savez_compressed.npz",
       std::string(reinterpret_cast<const char*>(testing::kNumpySavezCompressed),
                   sizeof(testing::kNumpySavezCompressed))}};
  for (const auto& [name, bytes] : files) {
    const std::string path = (dir / name).string();
    WriteFileBytes(path, bytes);
    const auto sources = OpenNpz(path);
    ASSERT_EQ(sources.size(), 2u) << name;
    ExpectSame(sources.at("x")->ReadRows(0, 3), x);
    ExpectSame(sources.at("mask")->ReadRows(1, 3), SliceAxis0(mask, 1, 3));
  }
}

TEST(NpzErrorTest, MissingFileAndNotAZip) {
  const auto dir = TestDir();
  const std::string missing = (dir / "missing.npz").string();
  EXPECT_THAT(ErrorOf([&] { OpenNpz(missing); }), HasSubstr("'" + missing + "' does not exist"));
  const std::string junk = (dir / "junk.npz").string();
  WriteFileBytes(junk, "this is not a zip archive");
  EXPECT_THAT(ErrorOf([&] { OpenNpz(junk); }), HasSubstr(junk + ": not a zip archive"));
}

TEST(NpzErrorTest, MembersThatAreNotArrays) {
  const auto dir = TestDir();
  const std::string path = (dir / "mixed.npz").string();
  WriteZip(path, {{"a.npy", EncodeNpy(Iota({2}))}, {"notes.txt", "hello"}});
  const std::string message = ErrorOf([&] { OpenNpz(path); });
  EXPECT_THAT(message, HasSubstr(path));
  EXPECT_THAT(message, HasSubstr("'notes.txt' is not an .npy array"));

  const std::string empty = (dir / "empty.npz").string();
  WriteZip(empty, {});
  EXPECT_THAT(ErrorOf([&] { OpenNpz(empty); }), HasSubstr(empty + ": archive holds no arrays"));
}

TEST(NpzErrorTest, CorruptMembersNameTheMember) {
  const auto dir = TestDir();
  const std::string path = (dir / "bad.npz").string();
  std::string truncated = EncodeNpy(Iota({4, 4}));
  truncated.resize(truncated.size() - 4);
  WriteZip(path, {{"ok.npy", EncodeNpy(Iota({1}))}, {"cut.npy", truncated}});
  std::string message = ErrorOf([&] { OpenNpz(path); });
  EXPECT_THAT(message, HasSubstr(path + ":cut"));
  EXPECT_THAT(message, HasSubstr("truncated"));

  WriteZip(path, {{"garbage.npy", "not an npy image"}});
  message = ErrorOf([&] { OpenNpz(path); });
  EXPECT_THAT(message, HasSubstr(path + ":garbage"));
  EXPECT_THAT(message, HasSubstr("magic"));

  std::string fortran = EncodeNpy(Iota({2, 2}));
  fortran.replace(fortran.find("False"), 5, "True ");
  WriteZip(path, {{"f.npy", fortran}});
  EXPECT_THAT(ErrorOf([&] { OpenNpz(path); }),
              HasSubstr(path + ":f: array is stored in Fortran order"));
  EXPECT_THAT(ErrorOf([&] { ReadNpz(path); }), HasSubstr("Fortran order"));
}

TEST(NpzErrorTest, TruncatedArchive) {
  const auto dir = TestDir();
  const std::string path = (dir / "t.npz").string();
  WriteNpz(path, SampleArrays());
  std::string bytes = ReadFileBytes(path);
  bytes.resize(bytes.size() / 2);
  WriteFileBytes(path, bytes);
  EXPECT_THAT(ErrorOf([&] { OpenNpz(path); }), HasSubstr(path));
}

}  // namespace
}  // namespace ptqkit::data
