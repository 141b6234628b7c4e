#include "data/npy.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "data/npy_header.h"
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

// A .npy image with a hand-written dict, for headers our writer would never produce.
std::string NpyWithDict(const std::string& dict, const std::string& data, int version = 1) {
  std::string text = dict + "\n";
  std::string out = "\x93NUMPY";
  out += static_cast<char>(version);
  out += '\0';
  const size_t length_bytes = version == 1 ? 2 : 4;
  for (size_t i = 0; i < length_bytes; ++i)
    out += static_cast<char>((text.size() >> (8 * i)) & 0xff);
  return out + text + data;
}

std::string FloatBytes(const std::vector<float>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
}

TEST(NpyHeaderTest, EncodesExactlyWhatNumpyWrites) {
  // np.save(f, np.zeros((2, 3), np.float32)) header, byte for byte (numpy 2.4).
  const std::string expected = std::string("\x93NUMPY\x01\x00v\x00", 10) +
                               "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }" +
                               std::string(58, ' ') + "\n";
  EXPECT_EQ(EncodeNpyHeader(DataType::kFloat, {2, 3}), expected);
  const std::string one_dim = EncodeNpyHeader(DataType::kUint8, {5});
  EXPECT_THAT(one_dim, HasSubstr("{'descr': '|u1', 'fortran_order': False, 'shape': (5,), }"));
  EXPECT_THAT(EncodeNpyHeader(DataType::kFloat16, {}),
              HasSubstr("'descr': '<f2', 'fortran_order': False, 'shape': (), }"));
  EXPECT_EQ(one_dim.size() % 64, 0u);
}

TEST(NpyHeaderTest, ParsesKeysInAnyOrderAndPython2Longs) {
  const std::string image =
      NpyWithDict("{'shape': (3L, 4L), 'fortran_order': False, 'descr': '<i8'}", "");
  const NpyHeader header = ParseNpyHeader(image, "x.npy");
  EXPECT_EQ(header.dtype, DataType::kInt64);
  EXPECT_EQ(header.shape, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(header.header_bytes, static_cast<int64_t>(image.size()));
  EXPECT_EQ(header.DataBytes(), 3 * 4 * 8);
}

TEST(NpyHeaderTest, MapsEveryDescr) {
  const std::vector<std::pair<std::string, DataType>> cases = {
      {"<f4", DataType::kFloat}, {"<f2", DataType::kFloat16}, {"<f8", DataType::kDouble},
      {"<i8", DataType::kInt64}, {"<i4", DataType::kInt32},   {"|u1", DataType::kUint8},
      {"|b1", DataType::kBool},  {"|i1", DataType::kInt8},    {"<u2", DataType::kUint16}};
  for (const auto& [descr, dtype] : cases) {
    const std::string image =
        NpyWithDict("{'descr': '" + descr + "', 'fortran_order': False, 'shape': (1,), }", "");
    EXPECT_EQ(ParseNpyHeader(image, "x.npy").dtype, dtype) << descr;
    EXPECT_EQ(NpyDescr(dtype), descr);
  }
}

TEST(NpyTest, RoundTripsEveryDtype) {
  const auto dir = TestDir();
  const std::vector<HostTensor> tensors = {
      Iota({2, 3}),
      MakeTensor<uint16_t>(DataType::kFloat16, {3}, {0x3c00, 0xc000, 0x7bff}),
      MakeTensor<double>(DataType::kDouble, {2}, {1.5, -2.25}),
      MakeTensor<int64_t>(DataType::kInt64, {2, 1}, {-7, int64_t{1} << 40}),
      MakeTensor<int32_t>(DataType::kInt32, {1, 2}, {-3, 9}),
      MakeTensor<uint8_t>(DataType::kUint8, {4}, {0, 1, 200, 255}),
      MakeTensor<uint8_t>(DataType::kBool, {3}, {1, 0, 1}),
      MakeTensor<int8_t>(DataType::kInt8, {2}, {-128, 127}),
      MakeTensor<float>(DataType::kFloat, {}, {4.5f}),
      HostTensor(DataType::kFloat, {0, 3}),
  };
  for (size_t i = 0; i < tensors.size(); ++i) {
    const std::string path = (dir / fmt::format("t{}.npy", i)).string();
    WriteNpy(path, tensors[i]);
    const HostTensor back = ReadNpy(path);
    EXPECT_EQ(back.dtype, tensors[i].dtype) << path;
    EXPECT_EQ(back.shape, tensors[i].shape) << path;
    EXPECT_EQ(back.bytes, tensors[i].bytes) << path;
    EXPECT_EQ(DecodeNpy(EncodeNpy(tensors[i]), path).bytes, tensors[i].bytes);
  }
}

TEST(NpyTest, ReadsVersion2AndVersion3Headers) {
  const auto dir = TestDir();
  const std::string v2 = (dir / "v2.npy").string();
  WriteNpy(v2, Iota({4, 2}), /*version=*/2);
  const std::string bytes = ReadFileBytes(v2);
  EXPECT_EQ(bytes[6], '\x02');
  EXPECT_EQ((bytes.size() - 4 * 2 * 4) % 64, 0u);
  EXPECT_EQ(Values<float>(ReadNpy(v2)), Values<float>(Iota({4, 2})));

  const std::string v3 = (dir / "v3.npy").string();
  WriteFileBytes(v3, NpyWithDict("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
                                 FloatBytes({1.f, 2.f}), /*version=*/3));
  EXPECT_EQ(Values<float>(ReadNpy(v3)), (std::vector<float>{1.f, 2.f}));
}

TEST(NpyTest, OpenNpyReadsRowRangesFromDisk) {
  const auto dir = TestDir();
  const std::string path = (dir / "a.npy").string();
  WriteNpy(path, Iota({5, 2}));
  const auto source = OpenNpy(path);
  EXPECT_EQ(source->shape(), (std::vector<int64_t>{5, 2}));
  EXPECT_EQ(source->row_bytes(), 8);
  EXPECT_EQ(Values<float>(source->ReadRows(1, 3)), (std::vector<float>{2, 3, 4, 5}));
  EXPECT_EQ(source->ReadRows(2, 2).shape, (std::vector<int64_t>{0, 2}));

  // Rewriting row 4 in place after opening shows up in the next read: rows come from the file,
  // not from a copy taken at open time.
  std::string bytes = ReadFileBytes(path);
  const std::string row4 = FloatBytes({-1.f, -2.f});
  bytes.replace(bytes.size() - 8, 8, row4);
  WriteFileBytes(path, bytes);
  EXPECT_EQ(Values<float>(source->ReadRows(3, 5)), (std::vector<float>{6, 7, -1, -2}));
}

TEST(NpyErrorTest, MissingFile) {
  const std::string path = (TestDir() / "nope.npy").string();
  try {
    ReadNpy(path);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(path));
    EXPECT_THAT(e.what(), HasSubstr("does not exist"));
    EXPECT_EQ(e.kind(), Error::Kind::kIo);
  }
}

TEST(NpyErrorTest, FortranOrder) {
  const std::string path = (TestDir() / "f.npy").string();
  WriteFileBytes(path, NpyWithDict("{'descr': '<f4', 'fortran_order': True, 'shape': (1, 2), }",
                                   FloatBytes({1, 2})));
  const std::string message = ErrorOf([&] { OpenNpy(path); });
  EXPECT_THAT(message, HasSubstr(path));
  EXPECT_THAT(message, HasSubstr("Fortran order"));
}

TEST(NpyErrorTest, UnsupportedDtypesAreNamed) {
  const auto dir = TestDir();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"'<U5'", "'<U5'"},
      {"'>f4'", "big-endian"},
      {"'|O'", "'|O'"},
      {"[('a', '<f4'), ('b', '<i4')]", "[('a', '<f4'), ('b', '<i4')]"}};
  for (const auto& [descr, expected] : cases) {
    const std::string path = (dir / "bad.npy").string();
    WriteFileBytes(path,
                   NpyWithDict("{'descr': " + descr + ", 'fortran_order': False, 'shape': (1,), }",
                               "xxxxxxxx"));
    const std::string message = ErrorOf([&] { ReadNpy(path); });
    EXPECT_THAT(message, HasSubstr(path));
    EXPECT_THAT(message, HasSubstr("unsupported dtype"));
    EXPECT_THAT(message, HasSubstr(expected));
  }
}

TEST(NpyErrorTest, TruncatedData) {
  const std::string path = (TestDir() / "t.npy").string();
  WriteNpy(path, Iota({4, 4}));
  std::string bytes = ReadFileBytes(path);
  bytes.resize(bytes.size() - 5);
  WriteFileBytes(path, bytes);
  const std::string message = ErrorOf([&] { OpenNpy(path); });
  EXPECT_THAT(message, HasSubstr(path));
  EXPECT_THAT(message, HasSubstr("truncated"));
  EXPECT_THAT(message, HasSubstr("4x4"));
}

TEST(NpyErrorTest, CorruptHeaders) {
  const auto dir = TestDir();
  const std::string path = (dir / "c.npy").string();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"PK\x03\x04 not numpy at all", "magic"},
      {"\x93NU", "magic"},
      {NpyWithDict("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)", "").substr(0, 40),
       "truncated"},
      {NpyWithDict("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)", ""), "header dict"},
      {NpyWithDict("{'descr': '<f4', 'shape': (2,), }", ""), "'fortran_order'"},
      {NpyWithDict("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -1), }", ""), "shape"},
      {NpyWithDict("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", "", /*version=*/7),
       "version 7"},
  };
  for (const auto& [bytes, expected] : cases) {
    WriteFileBytes(path, bytes);
    const std::string message = ErrorOf([&] { ReadNpy(path); });
    EXPECT_THAT(message, HasSubstr(path)) << expected;
    EXPECT_THAT(message, HasSubstr(expected));
  }
}

TEST(NpyTest, ScalarIsOneValue) {
  const std::string path = (TestDir() / "s.npy").string();
  WriteNpy(path, MakeTensor<float>(DataType::kFloat, {}, {2.5f}));
  const auto source = OpenNpy(path);
  EXPECT_TRUE(source->scalar());
  EXPECT_EQ(Values<float>(source->ReadRows(0, 1)), std::vector<float>{2.5f});
}

TEST(NpyErrorTest, PickledObjectArrayIsRefusedWithTheFix) {
  // What np.savez("calib.npz", calib_dict) stores as arr_0: a 0-d object array (pickle follows).
  const std::string path = (TestDir() / "o.npy").string();
  WriteFileBytes(path, NpyWithDict("{'descr': '|O', 'fortran_order': False, 'shape': (), }",
                                   "\x80\x04pickle"));
  const std::string message = ErrorOf([&] { OpenNpy(path); });
  EXPECT_THAT(message, HasSubstr(path));
  EXPECT_THAT(message, HasSubstr("pickled"));
  EXPECT_THAT(message, HasSubstr("np.savez(path, **calib_dict)"));
}

TEST(NpyErrorTest, UnwritableTypeAndPath) {
  const auto dir = TestDir();
  EXPECT_THAT(
      ErrorOf([&] { WriteNpy((dir / "b.npy").string(), HostTensor(DataType::kBFloat16, {2})); }),
      HasSubstr("bfloat16"));
  EXPECT_THAT(ErrorOf([&] { WriteNpy((dir / "no_dir" / "x.npy").string(), Iota({1})); }),
              HasSubstr("no_dir"));
}

}  // namespace
}  // namespace ptqkit::data
