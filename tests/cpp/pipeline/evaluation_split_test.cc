// Which calibration samples the loss report holds out (pipeline/loss_measurement.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "pipeline/loss_measurement.h"

namespace ptqkit {
namespace {

HostTensor Samples(int64_t n) {
  HostTensor t(DataType::kFloat, {n, 1});
  auto* v = reinterpret_cast<float*>(t.bytes.data());
  std::iota(v, v + n, 0.0f);
  return t;
}

CalibrationData Data(int64_t n, int64_t batch_size = 1, bool fixed = false) {
  CalibrationData data{CalibrationSet::FromTensors({{"x", Samples(n)}}), false, 1, 0, false, {}};
  data.set.Validate({InputSpec{"x", DataType::kFloat, {fixed ? batch_size : -1, 1}}});
  data.batch_size = batch_size;
  data.fixed_batch = fixed;
  data.num_batches = fixed ? n / batch_size : data.set.NumBatches(batch_size);
  return data;
}

std::vector<int64_t> Range(int64_t begin, int64_t end) {
  std::vector<int64_t> v(static_cast<size_t>(end - begin));
  std::iota(v.begin(), v.end(), begin);
  return v;
}

TEST(EvaluationSplit, HeldOutSamplesAreSpreadEvenlyThroughTheFile) {
  // 40 samples, 16 asked: a quarter (10) is held out, one in every 4, from the middle of each 4.
  CalibrationData data = Data(40);
  const EvalSplit split = SplitForEvaluation(data, 16);
  EXPECT_TRUE(split.held_out);
  EXPECT_EQ(split.evaluated, (std::vector<int64_t>{2, 6, 10, 14, 18, 22, 26, 30, 34, 38}));
  ASSERT_EQ(split.calibration.size(), 30u);
  std::vector<int64_t> all = split.calibration;
  all.insert(all.end(), split.evaluated.begin(), split.evaluated.end());
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, Range(0, 40));  // a partition of the file

  // The calibration view reads exactly the calibration samples, whatever the batch size.
  data.batch_size = 7;
  UseCalibrationSamples(&data, split);
  EXPECT_EQ(data.num_batches, 5);
  std::vector<int64_t> seen;
  for (int64_t b = 0; b < data.num_batches; ++b) {
    const HostTensor x = data.set.ReadBatch(b, 7).at("x");
    const auto* v = reinterpret_cast<const float*>(x.bytes.data());
    for (int64_t i = 0; i < x.shape[0]; ++i) seen.push_back(static_cast<int64_t>(v[i]));
  }
  EXPECT_EQ(seen, split.calibration);
  const accuracy::SampleRange range = UseEvaluationSamples(&data, split);
  EXPECT_EQ(range.count, 2);  // 10 samples in batches of 7
  EXPECT_EQ(reinterpret_cast<const float*>(data.set.ReadBatch(1, 7).at("x").bytes.data())[0], 30.0f);

  // 100 samples, 16 asked: 16 held out, about one in six.
  const EvalSplit many = SplitForEvaluation(Data(100), 16);
  ASSERT_EQ(many.evaluated.size(), 16u);
  EXPECT_EQ(many.evaluated.front(), 3);
  EXPECT_EQ(many.evaluated.back(), 96);
  EXPECT_EQ(many.calibration.size(), 84u);
}

TEST(EvaluationSplit, FixedBatchesMoveWholeAndSmallSetsAreInSample) {
  // A fixed batch of 2 over 16 samples: 8 batches, 2 held out (a quarter): batches 2 and 6.
  const EvalSplit fixed = SplitForEvaluation(Data(16, 2, true), 16);
  EXPECT_TRUE(fixed.held_out);
  EXPECT_EQ(fixed.evaluated, (std::vector<int64_t>{4, 5, 12, 13}));
  EXPECT_EQ(fixed.calibration.size(), 12u);

  // 3 samples: too few to hold out; the report runs on the last 2 asked, which also calibrate.
  const EvalSplit small = SplitForEvaluation(Data(3), 2);
  EXPECT_FALSE(small.held_out);
  EXPECT_EQ(small.evaluated, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(small.calibration, Range(0, 3));

  // --eval_samples 0: everything calibrates, no report.
  const EvalSplit none = SplitForEvaluation(Data(40), 0);
  EXPECT_TRUE(none.evaluated.empty());
  EXPECT_EQ(none.calibration, Range(0, 40));
}

}  // namespace
}  // namespace ptqkit
