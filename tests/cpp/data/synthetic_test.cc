#include "data/synthetic.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <set>

#include "ptqkit/calibration.h"
#include "test_files.h"

namespace ptqkit {
namespace {

using data::testing::ErrorOf;
using data::testing::Values;
using ::testing::HasSubstr;

InputSpec Spec(std::string name, std::vector<int64_t> shape, DataType dtype = DataType::kFloat) {
  return InputSpec{std::move(name), dtype, std::move(shape)};
}

// Every sample of input `name`, as bytes, read in batches of `batch_size`.
std::string AllBytes(const CalibrationSet& set, const std::string& name, int64_t batch_size) {
  std::string out;
  for (int64_t b = 0; b < set.NumBatches(batch_size); ++b) {
    const HostTensor t = set.ReadBatch(b, batch_size).at(name);
    out.append(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size());
  }
  return out;
}

// Golden values from an independent Python implementation of the documented recipe (mt19937_64,
// SplitMix64, FNV-1a, Box–Muller): they pin the distribution, which is part of the contract.
TEST(SyntheticTest, MatchesTheDocumentedRecipe) {
  const std::vector<float> x0 =
      Values<float>(CalibrationSet::Synthetic({Spec("x", {-1, 3})}, 2, 42).ReadBatch(0, 2).at("x"));
  const std::vector<float> expected = {1.2363394498825073f,   0.2771771252155304f,
                                       -0.45959222316741943f, 0.4931984841823578f,
                                       -1.0671523809432983f,  -0.45212700963020325f};
  ASSERT_EQ(x0.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(x0[i], expected[i], 1e-6) << i;

  const CalibrationSet ints =
      CalibrationSet::Synthetic({Spec("ids", {-1, 5}, DataType::kInt64)}, 2, 7);
  EXPECT_EQ(Values<int64_t>(ints.ReadBatch(0, 2).at("ids")),
            (std::vector<int64_t>{6, 4, 5, 7, 0, 1, 1, 1, 5, 5}));
  const CalibrationSet bools =
      CalibrationSet::Synthetic({Spec("m", {-1, 8}, DataType::kBool)}, 4, 7);
  EXPECT_EQ(Values<uint8_t>(bools.ReadBatch(3, 1).at("m")),
            (std::vector<uint8_t>{1, 0, 0, 0, 0, 0, 1, 1}));
}

TEST(SyntheticTest, SameSeedSameDataWhateverTheBatchSize) {
  const std::vector<InputSpec> model = {Spec("a", {-1, 3, 5}),
                                        Spec("b", {-1, 7}, DataType::kInt32)};
  CalibrationSet one = CalibrationSet::Synthetic(model, 10, 123);
  CalibrationSet two = CalibrationSet::Synthetic(model, 10, 123);
  CalibrationSet other = CalibrationSet::Synthetic(model, 10, 124);
  EXPECT_EQ(AllBytes(one, "a", 3), AllBytes(two, "a", 10));
  EXPECT_EQ(AllBytes(one, "b", 1), AllBytes(two, "b", 4));
  EXPECT_NE(AllBytes(one, "a", 10), AllBytes(other, "a", 10));
  // A sample does not depend on the number of samples or on the other inputs either.
  CalibrationSet fewer = CalibrationSet::Synthetic({Spec("a", {-1, 3, 5})}, 4, 123);
  EXPECT_EQ(AllBytes(fewer, "a", 4), AllBytes(one, "a", 10).substr(0, 4 * 15 * 4));
  // Different inputs get different streams.
  CalibrationSet c = CalibrationSet::Synthetic({Spec("a", {-1, 4}), Spec("c", {-1, 4})}, 3, 1);
  EXPECT_NE(AllBytes(c, "a", 3), AllBytes(c, "c", 3));
}

TEST(SyntheticTest, DistributionsPerType) {
  CalibrationSet set = CalibrationSet::Synthetic(
      {Spec("f", {-1, 64}), Spec("d", {-1, 64}, DataType::kDouble),
       Spec("i", {-1, 64}, DataType::kUint8), Spec("b", {-1, 64}, DataType::kBool),
       Spec("h", {-1, 64}, DataType::kFloat16)},
      200, 5);
  set.Validate({Spec("f", {-1, 64}), Spec("d", {-1, 64}, DataType::kDouble),
                Spec("i", {-1, 64}, DataType::kUint8), Spec("b", {-1, 64}, DataType::kBool),
                Spec("h", {-1, 64}, DataType::kFloat16)});
  const Batch batch = set.ReadBatch(0, 200);
  const std::vector<float> f = Values<float>(batch.at("f"));
  double sum = 0, sum_sq = 0;
  for (float v : f) {
    sum += v;
    sum_sq += static_cast<double>(v) * v;
  }
  const double mean = sum / f.size(), variance = sum_sq / f.size() - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.05);  // 12800 draws: the standard error of the mean is ~0.009
  EXPECT_NEAR(variance, 1.0, 0.06);

  const std::vector<double> d = Values<double>(batch.at("d"));
  EXPECT_TRUE(std::all_of(d.begin(), d.end(),
                          [](double v) { return std::isfinite(v) && std::abs(v) < 10; }));

  const std::vector<uint8_t> ints = Values<uint8_t>(batch.at("i"));
  EXPECT_EQ(std::set<uint8_t>(ints.begin(), ints.end()),
            (std::set<uint8_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  const std::vector<uint8_t> bools = Values<uint8_t>(batch.at("b"));
  EXPECT_EQ(std::set<uint8_t>(bools.begin(), bools.end()), (std::set<uint8_t>{0, 1}));

  const std::vector<uint16_t> h = Values<uint16_t>(batch.at("h"));
  std::set<uint16_t> distinct(h.begin(), h.end());
  EXPECT_GT(distinct.size(), 1000u);
  EXPECT_TRUE(std::all_of(h.begin(), h.end(), [](uint16_t v) { return (v & 0x7c00) != 0x7c00; }));
}

TEST(SyntheticTest, ShapesFillDynamicDims) {
  CalibrationSet set =
      CalibrationSet::Synthetic({Spec("img", {8, 3, -1, -1})}, 5, 1, {{"img", {2, 3, 16, 12}}});
  EXPECT_EQ(set.num_samples(), 5);  // axis 0 is the sample axis, even when the model fixes it to 8
  EXPECT_EQ(set.ReadBatch(0, 4).at("img").shape, (std::vector<int64_t>{4, 3, 16, 12}));
  EXPECT_EQ(set.ReadBatch(1, 4).at("img").shape, (std::vector<int64_t>{1, 3, 16, 12}));
  set.Validate({Spec("img", {8, 3, -1, -1})}, {{"img", {2, 3, 16, 12}}});
}

TEST(SyntheticErrorTest, NamesTheInput) {
  EXPECT_THAT(ErrorOf([] {
                CalibrationSet::Synthetic({Spec("img", {-1, 3, -1})}, 2, 0);
              }),
              HasSubstr("input 'img' dim 2 is dynamic"));
  EXPECT_THAT(
      ErrorOf([] {
        CalibrationSet::Synthetic({Spec("img", {-1, 3})}, 2, 0, {{"zz", {1, 3}}});
      }),
      HasSubstr("--calibration_shapes names 'zz', which is not a model input; model inputs: img"));
  EXPECT_THAT(ErrorOf([] {
                CalibrationSet::Synthetic({Spec("img", {-1, 3})}, 2, 0, {{"img", {1, 4}}});
              }),
              HasSubstr("--calibration_shapes: input 'img' dim 1 is 4, model expects 3"));
  EXPECT_THAT(ErrorOf([] {
                CalibrationSet::Synthetic({Spec("img", {-1, 3})}, 2, 0, {{"img", {1, 3, 1}}});
              }),
              HasSubstr("--calibration_shapes: input 'img' has rank 3"));
  EXPECT_THAT(
      ErrorOf([] { CalibrationSet::Synthetic({Spec("s", {-1}, DataType::kString)}, 2, 0); }),
      HasSubstr("input 's': cannot synthesise string data"));
  EXPECT_THAT(ErrorOf([] { CalibrationSet::Synthetic({Spec("s", {})}, 2, 0); }),
              HasSubstr("input 's' is a scalar"));
  EXPECT_THAT(ErrorOf([] { CalibrationSet::Synthetic({Spec("a", {-1})}, 0, 0); }),
              HasSubstr("at least 1 sample"));
}

TEST(FloatConversionTest, HalfRoundsToNearestEven) {
  EXPECT_EQ(data::FloatToHalfBits(1.0f), 0x3c00);
  EXPECT_EQ(data::FloatToHalfBits(-2.0f), 0xc000);
  EXPECT_EQ(data::FloatToHalfBits(0.1f), 0x2e66);
  EXPECT_EQ(data::FloatToHalfBits(65504.0f), 0x7bff);
  EXPECT_EQ(data::FloatToHalfBits(65519.0f), 0x7bff);
  EXPECT_EQ(data::FloatToHalfBits(65520.0f), 0x7c00);
  EXPECT_EQ(data::FloatToHalfBits(1.0f + 0x1.0p-11f), 0x3c00);      // tie, even stays
  EXPECT_EQ(data::FloatToHalfBits(1.0f + 3 * 0x1.0p-11f), 0x3c02);  // tie, odd rounds up
  EXPECT_EQ(data::FloatToHalfBits(0x1.0p-24f), 0x0001);             // smallest subnormal
  EXPECT_EQ(data::FloatToHalfBits(0x1.0p-25f), 0x0000);             // tie to even (zero)
  EXPECT_EQ(data::FloatToHalfBits(0x1.8p-25f), 0x0001);
  EXPECT_EQ(data::FloatToHalfBits(0x1.ffcp-15f), 0x0400);  // rounds up into the normals
  EXPECT_EQ(data::FloatToHalfBits(-0.0f), 0x8000);
  EXPECT_EQ(data::FloatToHalfBits(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(data::FloatToHalfBits(std::numeric_limits<float>::quiet_NaN()) & 0x7fff, 0x7e00);
  EXPECT_EQ(data::FloatToBFloat16Bits(1.0f), 0x3f80);
  EXPECT_EQ(data::FloatToBFloat16Bits(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // tie, even
  EXPECT_EQ(data::FloatToBFloat16Bits(std::bit_cast<float>(0x3f818000u)), 0x3f82);  // tie, odd
  EXPECT_EQ(data::FloatToBFloat16Bits(std::numeric_limits<float>::quiet_NaN()) & 0x7fc0, 0x7fc0);
}

}  // namespace
}  // namespace ptqkit
