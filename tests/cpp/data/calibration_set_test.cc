#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>

#include "data/npy.h"
#include "data/npz.h"
#include "ptqkit/calibration.h"
#include "test_files.h"

namespace ptqkit {
namespace {

using data::NpzCompression;
using data::WriteNpy;
using data::WriteNpz;
using data::testing::ErrorOf;
using data::testing::Iota;
using data::testing::MakeTensor;
using data::testing::ReadFileBytes;
using data::testing::TestDir;
using data::testing::Values;
using data::testing::WriteFileBytes;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

InputSpec Spec(std::string name, std::vector<int64_t> shape, DataType dtype = DataType::kFloat) {
  return InputSpec{std::move(name), dtype, std::move(shape)};
}

// Reads every batch and concatenates input `name` as floats.
std::vector<float> AllFloats(const CalibrationSet& set, const std::string& name,
                             int64_t batch_size) {
  std::vector<float> out;
  for (int64_t b = 0; b < set.NumBatches(batch_size); ++b) {
    const auto v = Values<float>(set.ReadBatch(b, batch_size).at(name));
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

std::vector<float> Range(float begin, float end) {
  std::vector<float> out;
  for (float v = begin; v < end; v += 1) out.push_back(v);
  return out;
}

TEST(CalibrationSetTest, NpyBindsToTheOnlyInputAndBatches) {
  const std::string path = (TestDir() / "x.npy").string();
  WriteNpy(path, Iota({10, 3}));
  CalibrationSet set = CalibrationSet::FromPath(path);
  set.Validate({Spec("input", {-1, 3})});
  EXPECT_EQ(set.names(), std::vector<std::string>{"input"});
  EXPECT_EQ(set.num_samples(), 10);
  EXPECT_EQ(set.NumBatches(4), 3);
  EXPECT_EQ(set.NumBatches(10), 1);
  EXPECT_EQ(set.NumBatches(1), 10);

  const Batch first = set.ReadBatch(0, 4);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first.at("input").shape, (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(Values<float>(first.at("input")), Range(0, 12));
  const Batch last = set.ReadBatch(2, 4);
  EXPECT_EQ(last.at("input").shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(Values<float>(last.at("input")), Range(24, 30));

  // Validating again (same model) is harmless.
  set.Validate({Spec("input", {-1, 3})});
  EXPECT_EQ(set.num_samples(), 10);
}

TEST(CalibrationSetTest, NpzWithSeveralInputs) {
  for (const auto compression : {NpzCompression::kStored, NpzCompression::kDeflated}) {
    const std::string path = (TestDir() / "x.npz").string();
    WriteNpz(path,
             {{"a", Iota({5, 2})},
              {"b", MakeTensor<int64_t>(DataType::kInt64, {5}, {10, 11, 12, 13, 14})}},
             compression);
    CalibrationSet set = CalibrationSet::FromPath(path);
    set.Validate({Spec("a", {-1, 2}), Spec("b", {-1}, DataType::kInt64)});
    EXPECT_THAT(set.names(), ElementsAre("a", "b"));
    const Batch batch = set.ReadBatch(1, 2);
    EXPECT_EQ(Values<float>(batch.at("a")), (std::vector<float>{4, 5, 6, 7}));
    EXPECT_EQ(Values<int64_t>(batch.at("b")), (std::vector<int64_t>{12, 13}));
    EXPECT_EQ(Values<int64_t>(set.ReadBatch(2, 2).at("b")), (std::vector<int64_t>{14}));
  }
}

TEST(CalibrationSetTest, DirectoryConcatenatesFilesInNameOrder) {
  const auto dir = TestDir();
  // Written out of order; 10.npz sorts before 2.npz (names compare as text).
  WriteNpz((dir / "2.npz").string(), {{"x", Iota({4, 2}, 100)}});
  WriteNpz((dir / "10.npz").string(), {{"x", Iota({2, 2}, 0)}}, NpzCompression::kDeflated);
  WriteNpz((dir / "30.npz").string(), {{"x", Iota({1, 2}, 200)}});
  WriteFileBytes(dir / "README.txt", "ignored");
  std::filesystem::create_directory(dir / "sub.npy");  // a directory, not a data file: ignored

  CalibrationSet set = CalibrationSet::FromPath(dir.string());
  set.Validate({Spec("x", {-1, 2})});
  EXPECT_EQ(set.num_samples(), 7);
  std::vector<float> expected = Range(0, 4);
  for (float v : Range(100, 108)) expected.push_back(v);
  expected.push_back(200);
  expected.push_back(201);
  // Batch sizes that straddle file boundaries in different places all see the same sequence.
  for (int64_t batch_size : {1, 2, 3, 5, 7, 100})
    EXPECT_EQ(AllFloats(set, "x", batch_size), expected) << batch_size;
  EXPECT_EQ(set.ReadBatch(1, 3).at("x").shape, (std::vector<int64_t>{3, 2}));
}

TEST(CalibrationSetTest, DirectoryOfNpyFiles) {
  const auto dir = TestDir();
  WriteNpy((dir / "b.npy").string(), Iota({2, 1}, 10));
  WriteNpy((dir / "a.npy").string(), Iota({3, 1}, 0));
  WriteNpy((dir / "c.NPY").string(), Iota({0, 1}));  // no samples: contributes nothing
  CalibrationSet set = CalibrationSet::FromPath(dir.string());
  set.Validate({Spec("only", {1, 1})});
  EXPECT_EQ(AllFloats(set, "only", 2), (std::vector<float>{0, 1, 2, 10, 11}));
}

TEST(CalibrationSetTest, LazyStoredNpzDirectoryMatchesEagerTensors) {
  const auto dir = TestDir();
  const HostTensor a1 = Iota({3, 4}), a2 = Iota({5, 4}, 50);
  const HostTensor b1 = MakeTensor<int32_t>(DataType::kInt32, {3}, {1, 2, 3});
  const HostTensor b2 = MakeTensor<int32_t>(DataType::kInt32, {5}, {4, 5, 6, 7, 8});
  WriteNpz((dir / "p1.npz").string(), {{"a", a1}, {"b", b1}});
  WriteNpz((dir / "p2.npz").string(), {{"a", a2}, {"b", b2}});

  HostTensor a(DataType::kFloat, {8, 4});
  std::memcpy(a.bytes.data(), a1.bytes.data(), a1.bytes.size());
  std::memcpy(a.bytes.data() + a1.bytes.size(), a2.bytes.data(), a2.bytes.size());
  const HostTensor b = MakeTensor<int32_t>(DataType::kInt32, {8}, {1, 2, 3, 4, 5, 6, 7, 8});

  const std::vector<InputSpec> model = {Spec("a", {-1, 4}), Spec("b", {-1}, DataType::kInt32)};
  CalibrationSet lazy = CalibrationSet::FromPath(dir.string());
  CalibrationSet eager = CalibrationSet::FromTensors({{"a", a}, {"b", b}});
  lazy.Validate(model);
  eager.Validate(model);
  ASSERT_EQ(lazy.NumBatches(3), eager.NumBatches(3));
  for (int64_t i = 0; i < lazy.NumBatches(3); ++i) {
    const Batch x = lazy.ReadBatch(i, 3), y = eager.ReadBatch(i, 3);
    for (const char* name : {"a", "b"}) {
      EXPECT_EQ(x.at(name).shape, y.at(name).shape);
      EXPECT_EQ(x.at(name).bytes, y.at(name).bytes) << name << " batch " << i;
    }
  }
}

TEST(CalibrationSetTest, BatchesAreReadFromDiskWhenAsked) {
  const std::string path = (TestDir() / "x.npy").string();
  WriteNpy(path, Iota({4, 1}));
  CalibrationSet set = CalibrationSet::FromPath(path);
  set.Validate({Spec("x", {-1, 1})});
  std::string bytes = ReadFileBytes(path);
  const float replacement = 42;
  bytes.replace(bytes.size() - 4, 4, std::string(reinterpret_cast<const char*>(&replacement), 4));
  WriteFileBytes(path, bytes);
  EXPECT_EQ(Values<float>(set.ReadBatch(1, 2).at("x")), (std::vector<float>{2, 42}));
}

TEST(CalibrationSetTest, FromTensorsBindsTheUnnamedTensor) {
  CalibrationSet set = CalibrationSet::FromTensors({{"", Iota({3, 2})}});
  set.Validate({Spec("pixels", {-1, 2})});
  EXPECT_EQ(set.names(), std::vector<std::string>{"pixels"});
  EXPECT_EQ(Values<float>(set.ReadBatch(0, 8).at("pixels")), Range(0, 6));
}

TEST(CalibrationSetTest, Float16DataIsRawBits) {
  const std::string path = (TestDir() / "h.npz").string();
  WriteNpz(
      path,
      {{"h", MakeTensor<uint16_t>(DataType::kFloat16, {2, 2}, {0x3c00, 0x4000, 0xbc00, 0x0000})}});
  CalibrationSet set = CalibrationSet::FromPath(path);
  set.Validate({Spec("h", {-1, 2}, DataType::kFloat16)});
  const HostTensor t = set.ReadBatch(1, 1).at("h");
  EXPECT_EQ(t.dtype, DataType::kFloat16);
  EXPECT_EQ(Values<uint16_t>(t), (std::vector<uint16_t>{0xbc00, 0x0000}));
}

TEST(CalibrationSetTest, StaticBatchDimIsNotTheSampleCount) {
  CalibrationSet set = CalibrationSet::FromTensors({{"x", Iota({100, 3, 4})}});
  set.Validate({Spec("x", {8, 3, -1})}, {{"x", {8, 3, 4}}});
  EXPECT_EQ(set.num_samples(), 100);
  EXPECT_EQ(set.NumBatches(8), 13);
  EXPECT_EQ(set.ReadBatch(12, 8).at("x").shape, (std::vector<int64_t>{4, 3, 4}));
}

TEST(CalibrationSetTest, PreconditionsThrow) {
  CalibrationSet set = CalibrationSet::FromTensors({{"x", Iota({3, 1})}});
  EXPECT_THAT(ErrorOf([&] { set.num_samples(); }), HasSubstr("before Validate"));
  set.Validate({Spec("x", {-1, 1})});
  EXPECT_THAT(ErrorOf([&] { set.NumBatches(0); }), HasSubstr("batch size"));
  EXPECT_THAT(ErrorOf([&] { set.ReadBatch(3, 1); }), HasSubstr("out of range"));
  EXPECT_THAT(ErrorOf([&] { set.ReadBatch(-1, 1); }), HasSubstr("out of range"));
}

TEST(CalibrationSetTest, MoveKeepsTheData) {
  CalibrationSet a = CalibrationSet::FromTensors({{"x", Iota({2, 1})}});
  CalibrationSet b = std::move(a);
  b.Validate({Spec("x", {-1, 1})});
  EXPECT_EQ(b.num_samples(), 2);
}

// ---- Errors: each one names what is wrong. ----

TEST(CalibrationSetErrorTest, MissingPathEmptyDirectoryAndWrongExtension) {
  const auto dir = TestDir();
  const std::string missing = (dir / "nothing.npz").string();
  EXPECT_THAT(ErrorOf([&] { CalibrationSet::FromPath(missing); }), HasSubstr(missing));
  WriteFileBytes(dir / "notes.txt", "x");
  EXPECT_THAT(ErrorOf([&] { CalibrationSet::FromPath(dir.string()); }),
              HasSubstr("no .npy or .npz files in " + dir.string()));
  const std::string csv = (dir / "data.csv").string();
  WriteFileBytes(csv, "1,2");
  EXPECT_THAT(ErrorOf([&] { CalibrationSet::FromPath(csv); }), HasSubstr(csv));
}

TEST(CalibrationSetErrorTest, CorruptFileInDirectoryIsNamed) {
  const auto dir = TestDir();
  WriteNpy((dir / "a.npy").string(), Iota({2, 2}));
  WriteFileBytes(dir / "b.npy", "garbage");
  EXPECT_THAT(ErrorOf([&] { CalibrationSet::FromPath(dir.string()); }),
              HasSubstr((dir / "b.npy").string()));
}

TEST(CalibrationSetErrorTest, KeyNotAModelInput) {
  CalibrationSet set =
      CalibrationSet::FromTensors({{"a", Iota({2, 1})}, {"b", Iota({2, 1})}, {"x", Iota({2, 1})}});
  EXPECT_EQ(ErrorOf([&] {
              set.Validate({Spec("a", {-1, 1}), Spec("b", {-1, 1})});
            }),
            "calibration data has input 'x' that the model does not have; model inputs: a, b");
}

TEST(CalibrationSetErrorTest, ModelInputWithoutData) {
  CalibrationSet set = CalibrationSet::FromTensors({{"b", Iota({2, 1})}});
  EXPECT_EQ(ErrorOf([&] {
              set.Validate({Spec("a", {-1, 1}), Spec("b", {-1, 1})});
            }),
            "model input 'a' has no calibration data");
}

TEST(CalibrationSetErrorTest, NpyForAModelWithSeveralInputs) {
  const std::string path = (TestDir() / "x.npy").string();
  WriteNpy(path, Iota({2, 1}));
  CalibrationSet set = CalibrationSet::FromPath(path);
  const std::string message = ErrorOf([&] {
    set.Validate({Spec("a", {-1, 1}), Spec("b", {-1, 1})});
  });
  EXPECT_THAT(message, HasSubstr(path));
  EXPECT_THAT(message, HasSubstr("2 inputs (a, b)"));
  // The failed Validate did not bind the array: a single-input model still takes it.
  set.Validate({Spec("a", {-1, 1})});
  EXPECT_EQ(set.names(), std::vector<std::string>{"a"});
}

TEST(CalibrationSetErrorTest, DtypeMismatch) {
  // float64 cannot become int64: only float64/float16 -> float32 and int32 -> int64 are cast.
  CalibrationSet set = CalibrationSet::FromTensors(
      {{"a", MakeTensor<double>(DataType::kDouble, {2, 1}, {1.0, 2.0})}});
  EXPECT_THAT(ErrorOf([&] {
                set.Validate({Spec("a", {-1, 1}, DataType::kInt64)});
              }),
              HasSubstr("input 'a': model expects int64, data is float64"));
}

TEST(CalibrationSetTest, Float64AndInt32AreCastToTheModelsType) {
  const std::string path = (TestDir() / "d.npz").string();
  WriteNpz(path, {{"a", MakeTensor<double>(DataType::kDouble, {3, 1}, {1.5, -2.25, 1e40})},
                  {"ids", MakeTensor<int32_t>(DataType::kInt32, {3, 1}, {7, -1, 2147483647})}});
  CalibrationSet set = CalibrationSet::FromPath(path);
  set.Validate({Spec("a", {-1, 1}), Spec("ids", {-1, 1}, DataType::kInt64)});
  const Batch batch = set.ReadBatch(0, 3);
  EXPECT_EQ(batch.at("a").dtype, DataType::kFloat);
  const auto a = Values<float>(batch.at("a"));
  EXPECT_EQ(a[0], 1.5f);
  EXPECT_EQ(a[1], -2.25f);
  EXPECT_TRUE(std::isinf(a[2]));  // out of float32 range: the warning is why
  EXPECT_EQ(batch.at("ids").dtype, DataType::kInt64);
  EXPECT_THAT(Values<int64_t>(batch.at("ids")), ElementsAre(7, -1, 2147483647));

  // float16 bits 0x3E00 = 1.5, 0xC000 = -2.
  CalibrationSet half = CalibrationSet::FromTensors(
      {{"h", MakeTensor<uint16_t>(DataType::kFloat16, {2}, {0x3E00, 0xC000})}});
  half.Validate({Spec("h", {-1})});
  EXPECT_THAT(Values<float>(half.ReadBatch(0, 2).at("h")), ElementsAre(1.5f, -2.f));
}

TEST(CalibrationSetTest, ScalarIsFedWholeWithEveryBatch) {
  const std::string path = (TestDir() / "s.npz").string();
  WriteNpz(path, {{"x", Iota({5, 2})}, {"sr", MakeTensor<int64_t>(DataType::kInt64, {}, {16000})}});
  CalibrationSet set = CalibrationSet::FromPath(path);
  set.Validate({Spec("x", {-1, 2}), Spec("sr", {}, DataType::kInt64)});
  EXPECT_EQ(set.num_samples(), 5);
  EXPECT_EQ(set.sample_axis("sr"), -1);
  EXPECT_EQ(set.NumBatches(2), 3);
  for (int64_t b = 0; b < 3; ++b) {
    const Batch batch = set.ReadBatch(b, 2);
    EXPECT_TRUE(batch.at("sr").shape.empty());
    EXPECT_THAT(Values<int64_t>(batch.at("sr")), ElementsAre(16000));
  }
  EXPECT_EQ(set.ReadBatch(2, 2).at("x").shape, (std::vector<int64_t>{1, 2}));
}

TEST(CalibrationSetTest, FixedShapeInputIsFedWhole) {
  CalibrationSet set =
      CalibrationSet::FromTensors({{"x", Iota({6, 2})}, {"table", Iota({3, 4}, 100)}});
  set.Validate({Spec("x", {-1, 2}), Spec("table", {3, 4})});
  EXPECT_EQ(set.num_samples(), 6);
  EXPECT_EQ(set.sample_axis("table"), -1);
  const Batch batch = set.ReadBatch(1, 4);
  EXPECT_EQ(batch.at("table").shape, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(Values<float>(batch.at("table")), Range(100, 112));
  EXPECT_EQ(batch.at("x").shape, (std::vector<int64_t>{2, 2}));
}

// state [layers=2, B, hidden=3], 5 samples along axis 1: element (l, b, h) = l*100 + b*10 + h.
HostTensor State() {
  std::vector<float> v;
  for (int l = 0; l < 2; ++l)
    for (int b = 0; b < 5; ++b)
      for (int h = 0; h < 3; ++h) v.push_back(l * 100 + b * 10 + h);
  return MakeTensor<float>(DataType::kFloat, {2, 5, 3}, v);
}

void ExpectStateBatches(const CalibrationSet& set) {
  EXPECT_EQ(set.num_samples(), 5);
  EXPECT_EQ(set.sample_axis("state"), 1);
  const Batch first = set.ReadBatch(0, 3);
  EXPECT_EQ(first.at("state").shape, (std::vector<int64_t>{2, 3, 3}));
  EXPECT_EQ(Values<float>(first.at("state")),
            (std::vector<float>{0, 1, 2, 10, 11, 12, 20, 21, 22, 100, 101, 102, 110, 111, 112,
                                120, 121, 122}));
  const Batch last = set.ReadBatch(1, 3);
  EXPECT_EQ(last.at("state").shape, (std::vector<int64_t>{2, 2, 3}));
  EXPECT_EQ(Values<float>(last.at("state")),
            (std::vector<float>{30, 31, 32, 40, 41, 42, 130, 131, 132, 140, 141, 142}));
  EXPECT_EQ(last.at("x").shape, (std::vector<int64_t>{2, 4}));
}

TEST(CalibrationSetTest, SampleViewReadsTheListedSamplesInOrderAcrossFilesAndAxes) {
  // Axis 0 over two files (samples 0-3 in a.npz, 4-6 in b.npz): the view [1, 2, 5, 6, 0] crosses
  // the file boundary inside a run and wraps back to the first sample.
  const auto dir = TestDir();
  WriteNpz((dir / "a.npz").string(), {{"x", Iota({4, 2}, 0)}});
  WriteNpz((dir / "b.npz").string(), {{"x", Iota({3, 2}, 100)}});
  CalibrationSet files = CalibrationSet::FromPath(dir.string());
  files.Validate({Spec("x", {-1, 2})});
  files.SetSamples({1, 2, 5, 6, 0});
  EXPECT_EQ(files.num_samples(), 5);
  EXPECT_EQ(files.total_samples(), 7);
  const std::vector<float> expected{2, 3, 4, 5, 102, 103, 104, 105, 0, 1};
  for (int64_t batch_size : {1, 2, 3, 5}) EXPECT_EQ(AllFloats(files, "x", batch_size), expected) << batch_size;
  EXPECT_EQ(files.ReadBatch(1, 3).at("x").shape, (std::vector<int64_t>{2, 2}));
  EXPECT_THAT(ErrorOf([&] { files.SetSamples({7}); }), HasSubstr("sample 7 of a set of 7"));
  files.SetWindow(3, 5);  // a window is a view too
  EXPECT_EQ(AllFloats(files, "x", 2), (std::vector<float>{6, 7, 100, 101}));

  // Samples along axis 1 of a state: every layer keeps the view's samples, in the view's order.
  CalibrationSet state = CalibrationSet::FromTensors({{"x", Iota({5, 4})}, {"state", State()}});
  state.Validate({Spec("x", {-1, 4}), Spec("state", {2, -1, 3})});
  state.SetSamples({4, 0, 1});
  const Batch batch = state.ReadBatch(0, 3);
  EXPECT_EQ(batch.at("state").shape, (std::vector<int64_t>{2, 3, 3}));
  EXPECT_EQ(Values<float>(batch.at("state")),
            (std::vector<float>{40, 41, 42, 0, 1, 2, 10, 11, 12, 140, 141, 142, 100, 101, 102, 110, 111, 112}));
  EXPECT_EQ(Values<float>(batch.at("x")), (std::vector<float>{16, 17, 18, 19, 0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(CalibrationSetTest, BatchAxisGivenExplicitly) {
  CalibrationSet set = CalibrationSet::FromTensors({{"x", Iota({5, 4})}, {"state", State()}});
  // Two dynamic dims: nothing to infer, so the axis must be given.
  const std::vector<InputSpec> model = {Spec("x", {-1, 4}), Spec("state", {-1, -1, 3})};
  EXPECT_THAT(ErrorOf([&] { set.Validate(model); }), HasSubstr("different sample counts"));
  set.Validate(model, {}, {{"state", 1}});
  ExpectStateBatches(set);
}

TEST(CalibrationSetTest, BatchAxisInferredFromTheOnlyDynamicDim) {
  const std::string path = (TestDir() / "state.npz").string();
  WriteNpz(path, {{"x", Iota({5, 4})}, {"state", State()}});
  CalibrationSet set = CalibrationSet::FromPath(path);
  set.Validate({Spec("x", {-1, 4}), Spec("state", {2, -1, 3})});
  ExpectStateBatches(set);
}

TEST(CalibrationSetTest, StaticBatchOfOneIsNotInferredAsASequenceAxis) {
  // [1, seq]: a fixed batch of 1 with a dynamic length; the data's axis 0 holds the samples.
  CalibrationSet set = CalibrationSet::FromTensors({{"ids", Iota({4, 7})}});
  set.Validate({Spec("ids", {1, -1})});
  EXPECT_EQ(set.sample_axis("ids"), 0);
  EXPECT_EQ(set.num_samples(), 4);
}

TEST(CalibrationSetErrorTest, BadBatchAxis) {
  CalibrationSet set = CalibrationSet::FromTensors({{"state", State()}});
  EXPECT_THAT(ErrorOf([&] { set.Validate({Spec("state", {2, -1, 3})}, {}, {{"state", 3}}); }),
              HasSubstr("axis 3 is out of range"));
  EXPECT_THAT(ErrorOf([&] { set.Validate({Spec("state", {2, -1, 3})}, {}, {{"h", 1}}); }),
              HasSubstr("--calibration_batch_axis names 'h'"));
  // Axis 0 for a state whose axis 0 is the 2 layers: 2 "samples" against x's 5.
  CalibrationSet two = CalibrationSet::FromTensors({{"x", Iota({5, 4})}, {"state", State()}});
  EXPECT_THAT(ErrorOf([&] {
                two.Validate({Spec("x", {-1, 4}), Spec("state", {2, -1, 3})}, {}, {{"state", 0}});
              }),
              HasSubstr("different sample counts: state has 2, x has 5"));
}

TEST(BatchAxisListTest, Parses) {
  EXPECT_EQ(ParseBatchAxisList("state:1,h:2 c:0"),
            (std::map<std::string, int64_t>{{"state", 1}, {"h", 2}, {"c", 0}}));
  EXPECT_TRUE(ParseBatchAxisList("").empty());
  EXPECT_THAT(ErrorOf([] { ParseBatchAxisList("state"); }), HasSubstr("bad entry 'state'"));
  EXPECT_THAT(ErrorOf([] { ParseBatchAxisList("state:-1"); }), HasSubstr("bad entry"));
  EXPECT_THAT(ErrorOf([] { ParseBatchAxisList("s:1,s:2"); }), HasSubstr("given twice"));
}

TEST(CalibrationSetErrorTest, RankMismatch) {
  CalibrationSet set = CalibrationSet::FromTensors({{"a", Iota({2, 3})}});
  const std::string message = ErrorOf([&] { set.Validate({Spec("a", {-1, 3, 4})}); });
  EXPECT_THAT(message, HasSubstr("input 'a': model expects rank 3 (?x3x4), data has rank 2 (2x3)"));
}

TEST(CalibrationSetErrorTest, StaticDimMismatch) {
  CalibrationSet set = CalibrationSet::FromTensors({{"a", Iota({1, 3, 112})}});
  EXPECT_THAT(ErrorOf([&] {
                set.Validate({Spec("a", {1, 3, 224})});
              }),
              HasSubstr("input 'a' dim 2: model expects 224, data has 112"));
}

TEST(CalibrationSetErrorTest, UnequalSampleCounts) {
  CalibrationSet set = CalibrationSet::FromTensors({{"a", Iota({4, 1})}, {"b", Iota({3, 1})}});
  const std::string message = ErrorOf([&] {
    set.Validate({Spec("a", {-1, 1}), Spec("b", {-1, 1})});
  });
  EXPECT_THAT(message, HasSubstr("different sample counts"));
  EXPECT_THAT(message, HasSubstr("a has 4, b has 3"));
}

TEST(CalibrationSetErrorTest, NoSamples) {
  CalibrationSet set = CalibrationSet::FromTensors({{"a", Iota({0, 1})}});
  EXPECT_THAT(ErrorOf([&] { set.Validate({Spec("a", {-1, 1})}); }), HasSubstr("no samples"));
}

TEST(CalibrationSetErrorTest, DirectoryFilesWithDifferentKeys) {
  const auto dir = TestDir();
  WriteNpz((dir / "a.npz").string(), {{"x", Iota({2, 1})}, {"y", Iota({2, 1})}});
  WriteNpz((dir / "b.npz").string(), {{"x", Iota({2, 1})}});
  const std::string message = ErrorOf([&] { CalibrationSet::FromPath(dir.string()); });
  EXPECT_THAT(message, HasSubstr("b.npz holds arrays (x) but a.npz holds (x, y)"));
}

TEST(CalibrationSetErrorTest, DirectoryMixingNpyAndNpz) {
  const auto dir = TestDir();
  WriteNpy((dir / "a.npy").string(), Iota({2, 1}));
  WriteNpz((dir / "b.npz").string(), {{"x", Iota({2, 1})}});
  EXPECT_THAT(ErrorOf([&] { CalibrationSet::FromPath(dir.string()); }),
              HasSubstr("b.npz holds arrays (x)"));
}

TEST(CalibrationSetErrorTest, DirectoryFilesWithDifferentSampleShapesOrTypes) {
  const auto dir = TestDir();
  WriteNpz((dir / "a.npz").string(), {{"x", Iota({2, 3})}});
  WriteNpz((dir / "b.npz").string(), {{"x", Iota({5, 4})}});
  EXPECT_THAT(ErrorOf([&] { CalibrationSet::FromPath(dir.string()); }),
              HasSubstr("input 'x': b.npz has shape 5x4 but a.npz has 2x3"));
  WriteNpz((dir / "b.npz").string(),
           {{"x", MakeTensor<int32_t>(DataType::kInt32, {1, 3}, {1, 2, 3})}});
  EXPECT_THAT(ErrorOf([&] { CalibrationSet::FromPath(dir.string()); }),
              HasSubstr("input 'x': b.npz holds int32 but a.npz holds float32"));
}

TEST(CalibrationSetErrorTest, CalibrationShapesUnknownInputOrDisagreeing) {
  CalibrationSet set = CalibrationSet::FromTensors({{"a", Iota({2, 3, 4})}});
  const std::vector<InputSpec> model = {Spec("a", {-1, 3, -1})};
  EXPECT_THAT(
      ErrorOf([&] {
        set.Validate(model, {{"zz", {1, 3, 4}}});
      }),
      HasSubstr("--calibration_shapes names 'zz', which is not a model input; model inputs: a"));
  EXPECT_THAT(ErrorOf([&] {
                set.Validate(model, {{"a", {1, 3, 5}}});
              }),
              HasSubstr("--calibration_shapes: input 'a' dim 2 is 5, data has 4"));
  EXPECT_THAT(ErrorOf([&] {
                set.Validate(model, {{"a", {1, 12}}});
              }),
              HasSubstr("--calibration_shapes: input 'a' has rank 2"));
  set.Validate(model, {{"a", {16, 3, 4}}});  // axis 0 of the given shape is the batch: not checked
  EXPECT_EQ(set.num_samples(), 2);
}

TEST(CalibrationSetErrorTest, BadTensors) {
  EXPECT_THAT(ErrorOf([] { CalibrationSet::FromTensors({}); }),
              HasSubstr("no calibration tensors"));
  EXPECT_THAT(ErrorOf([] {
                CalibrationSet::FromTensors({{"", Iota({1})}, {"b", Iota({1})}});
              }),
              HasSubstr("unnamed tensor"));
}

}  // namespace
}  // namespace ptqkit
