// Shard specs, fingerprints and the merge of calibration and sensitivity parts (no ONNX Runtime:
// the parts are built here; tests/python/test_shards.py runs the real sharded commands).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <fmt/format.h>

#include "ptqkit/error.h"
#include "scan/calibration_part.h"
#include "scan/sensitivity_part.h"
#include "scan/shard_spec.h"

namespace ptqkit::shard {
namespace {

using ::testing::HasSubstr;

std::string TempDir(const std::string& test) {
  const std::string dir = std::string(PTQKIT_TEST_TMPDIR) + "/shard_test/" + test;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

template <typename F>
std::string ErrorOf(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ShardSpecTest, ParsesKOfNCountingFromZero) {
  EXPECT_EQ(ParseShard("0/1"), (ShardSpec{0, 1}));
  EXPECT_EQ(ParseShard("2/3"), (ShardSpec{2, 3}));
  for (const char* bad : {"3/3", "1", "-1/2", "1/0", "a/2", "1/2x", ""}) {
    EXPECT_THAT(ErrorOf([&] { ParseShard(bad); }), HasSubstr("expected K/N")) << bad;
  }
}

TEST(ShardSpecTest, SlicesCoverEveryItemOnce) {
  for (int64_t total : {0, 1, 2, 5, 17}) {
    for (int64_t n = 1; n <= 6; ++n) {
      int64_t next = 0;
      int64_t strided = 0;
      for (int64_t k = 0; k < n; ++k) {
        const auto [begin, end] = ContiguousSlice(total, {k, n});
        EXPECT_EQ(begin, next);
        next = end;
        for (int64_t i = 0; i < total; ++i) strided += OwnsStrided(i, {k, n}) ? 1 : 0;
      }
      EXPECT_EQ(next, total);
      EXPECT_EQ(strided, total);
    }
  }
}

TEST(ShardSpecTest, RequireCompleteSetNamesTheProblem) {
  EXPECT_EQ(ErrorOf([] { RequireCompleteSet({{1, 2}, {0, 2}}, {"b", "a"}); }), "");
  EXPECT_THAT(ErrorOf([] { RequireCompleteSet({{0, 2}, {0, 2}}, {"a", "b"}); }), HasSubstr("shard 0/2 is given twice"));
  EXPECT_THAT(ErrorOf([] { RequireCompleteSet({{0, 3}, {2, 3}}, {"a", "c"}); }), HasSubstr("shard 1/3 is missing"));
  EXPECT_THAT(ErrorOf([] { RequireCompleteSet({{0, 2}, {1, 3}}, {"a", "b"}); }),
              HasSubstr("parts of different splits"));
}

TEST(FingerprintTest, RefusalNamesTheKeyAndBothValues) {
  const Fingerprint a = {{"model", "0123"}, {"metric", "kl_div"}};
  Fingerprint b = a;
  EXPECT_EQ(ErrorOf([&] { RequireSameFingerprint(a, "p0.json", b, "p1.json"); }), "");
  b["metric"] = "mse";
  const std::string e = ErrorOf([&] { RequireSameFingerprint(a, "p0.json", b, "p1.json"); });
  EXPECT_THAT(e, HasSubstr("metric differs ('kl_div' vs 'mse')"));
  EXPECT_THAT(e, HasSubstr("'p0.json' and 'p1.json'"));
}

// A table over batches [first, end) of fixed random data with two tensors, one of them heavy-tailed
// so that later batches raise its histogram range (bins then merge 2:1).
calib::CalibrationTable TableOf(int64_t first, int64_t end) {
  calib::CalibrationTable table;
  for (const char* name : {"x", "tail"}) table.tensors.emplace(name, calib::TensorStatistics(name));
  for (int64_t b = first; b < end; ++b) {
    std::mt19937_64 rng(static_cast<uint64_t>(b));
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> v(1000);
    for (float& x : v) x = dist(rng);
    table.tensors.at("x").Add(v.data(), v.size());
    for (float& x : v) x = x * x * x * static_cast<float>(b + 1);
    if (b % 3 == 0) v[0] = 0.0f;
    table.tensors.at("tail").Add(v.data(), v.size());
  }
  return table;
}

TEST(CalibrationPartTest, MergedPartsGiveTheWholeTableBytesForAnyNAndOrder) {
  const std::string dir = TempDir("merge");
  const int64_t batches = 7;
  calib::CalibrationTable whole = TableOf(0, batches);
  whole.source = {{"model", "m"}, {"data", "d"}};
  whole.Save(dir + "/whole.json");
  for (int64_t n : {1, 2, 3, 7, 9}) {
    std::vector<CalibrationPart> parts;
    std::vector<std::string> names;
    for (int64_t k = 0; k < n; ++k) {
      const auto [begin, end] = ContiguousSlice(batches, {k, n});
      CalibrationPart part{{k, n}, whole.source, (end - begin) * 1000, TableOf(begin, end)};
      names.push_back(fmt::format("{}/part{}.json", dir, k));
      SaveCalibrationPart(part, names.back());
    }
    std::reverse(names.begin(), names.end());  // any order
    for (const auto& name : names) parts.push_back(LoadCalibrationPart(name));
    MergeCalibrationParts(parts, names).Save(dir + "/merged.json");
    EXPECT_EQ(ReadText(dir + "/merged.json"), ReadText(dir + "/whole.json")) << "N = " << n;
  }
}

TEST(CalibrationPartTest, RefusesPartsOfAnotherRunAndWholeTables) {
  const std::string dir = TempDir("refuse");
  const CalibrationPart a{{0, 2}, {{"model", "m1"}}, 1, TableOf(0, 1)};
  const CalibrationPart b{{1, 2}, {{"model", "m2"}}, 1, TableOf(1, 2)};
  EXPECT_THAT(ErrorOf([&] { MergeCalibrationParts({a, b}, {"a.json", "b.json"}); }),
              HasSubstr("model differs ('m1' vs 'm2')"));
  TableOf(0, 1).Save(dir + "/table.json");
  EXPECT_THAT(ErrorOf([&] { LoadCalibrationPart(dir + "/table.json"); }), HasSubstr("needs no merging"));
}

SensitivityPart PartOf(int64_t k, int64_t n, const std::vector<std::string>& all) {
  SensitivityPart p;
  p.shard = {k, n};
  p.fingerprint = {{"model", "m"}};
  p.num_targets = static_cast<int64_t>(all.size());
  p.result.onnx_path = "m.onnx";
  p.result.metric = "kl_div";
  p.result.granularity = "node";
  p.result.target_precision = "int8";
  p.result.calibration_source = "real";
  p.result.timings = {{"probes_s", 1.0 + static_cast<double>(k)}};
  for (size_t i = static_cast<size_t>(k); i < all.size(); i += static_cast<size_t>(n)) {
    p.targets.push_back(all[i]);
    if (all[i][0] == 'f') p.result.failed.emplace_back(all[i], "why " + all[i]);
    else p.result.scores[all[i]] = static_cast<double>(i) * 0.5;
  }
  return p;
}

TEST(SensitivityPartTest, MergeRebuildsScanOrderAndRoundTrips) {
  const std::string dir = TempDir("sens");
  // Failed targets listed in the scan's order: f9, f1, f4 (not sorted by name).
  const std::vector<std::string> all = {"a", "f9", "b", "c", "f1", "d", "f4", "e"};
  for (int64_t n : {1, 2, 3}) {
    std::vector<SensitivityPart> parts;
    std::vector<std::string> names;
    for (int64_t k = n - 1; k >= 0; --k) {
      names.push_back(fmt::format("{}/p{}.json", dir, k));
      SaveSensitivityPart(PartOf(k, n, all), names.back());
      parts.push_back(LoadSensitivityPart(names.back()));
    }
    const SensitivityResult merged = MergeSensitivityParts(parts, names);
    ASSERT_EQ(merged.failed.size(), 3u);
    EXPECT_EQ(merged.failed[0].first, "f9");
    EXPECT_EQ(merged.failed[1].first, "f1");
    EXPECT_EQ(merged.failed[2].first, "f4");
    EXPECT_EQ(merged.scores.size(), 5u);
    EXPECT_EQ(merged.scores.at("e"), 3.5);
    EXPECT_EQ(merged.timings.at("probes_s"), static_cast<double>(n));
  }
}

TEST(SensitivityPartTest, RefusesMismatchedParts) {
  const std::vector<std::string> all = {"a", "b", "c"};
  SensitivityPart a = PartOf(0, 2, all), b = PartOf(1, 2, all);
  b.fingerprint["model"] = "other";
  EXPECT_THAT(ErrorOf([&] { MergeSensitivityParts({a, b}, {"a", "b"}); }), HasSubstr("model differs"));
  b = PartOf(1, 2, all);
  b.targets.push_back("c");
  EXPECT_THAT(ErrorOf([&] { MergeSensitivityParts({a, b}, {"a", "b"}); }), HasSubstr("lists 2 of 3 target(s)"));
}

}  // namespace
}  // namespace ptqkit::shard
