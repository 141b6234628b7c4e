#include "calib/calibration_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "calib/scale_search.h"
#include "ptqkit/error.h"

namespace ptqkit::calib {
namespace {

using ::testing::HasSubstr;

std::string TempDir(const std::string& test) {
  const std::string dir = std::string(PTQKIT_TEST_TMPDIR) + "/calibration_table_test/" + test;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string ErrorOf(const std::string& path) {
  try {
    CalibrationTable::Load(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(CalibrationTableTest, SaveLoadRoundTripIsExact) {
  std::mt19937_64 rng(8);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  CalibrationTable table;
  for (const char* name : {"input", "/conv1/Conv_output_0", "weird \"name\""}) {
    TensorStatistics stats(name);
    std::vector<float> v(50000);
    for (float& x : v) x = dist(rng);
    stats.Add(v.data(), v.size());
    table.tensors.emplace(name, std::move(stats));
  }
  table.tensors.emplace("max_only", TensorStatistics("max_only", false));
  const float one = 1.0f;
  table.tensors.at("max_only").Add(&one, 1);

  const std::string path = TempDir("round_trip") + "/table.json";
  table.Save(path);
  table.Save(path);  // Overwrites in place.
  const CalibrationTable back = CalibrationTable::Load(path);
  EXPECT_EQ(back, table);
  for (const auto& [name, stats] : table.tensors) {
    for (Method m : {Method::kMax, Method::kEntropy, Method::kPercentile, Method::kMse}) {
      if (!stats.with_histogram() && m != Method::kMax) continue;
      EXPECT_EQ(ComputeAmax(back.tensors.at(name), m), ComputeAmax(stats, m)) << name;
    }
  }
  // No temporary files left behind.
  int files = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(
           std::filesystem::path(path).parent_path())) ++files;
  EXPECT_EQ(files, 1);
}

TEST(CalibrationTableTest, LoadErrorsNameTheFileAndTheProblem) {
  const std::string dir = TempDir("load_errors");
  std::string missing = dir + "/missing.json";
  EXPECT_THAT(ErrorOf(missing), HasSubstr(missing));

  const std::string not_json = dir + "/not_json.json";
  WriteText(not_json, "{ nope");
  EXPECT_THAT(ErrorOf(not_json), HasSubstr(not_json));
  EXPECT_THAT(ErrorOf(not_json), HasSubstr("not valid JSON"));

  const std::string wrong_format = dir + "/wrong_format.json";
  WriteText(wrong_format, R"({"format": "something else"})");
  EXPECT_THAT(ErrorOf(wrong_format), HasSubstr("not a ptqkit calibration table"));

  const std::string wrong_version = dir + "/wrong_version.json";
  WriteText(wrong_version,
            R"({"format": "ptqkit.calibration_table", "version": 9, "CalibrationTable": {}})");
  EXPECT_THAT(ErrorOf(wrong_version), HasSubstr("version 9"));

  const std::string bad_entry = dir + "/bad_entry.json";
  WriteText(bad_entry, R"({"format": "ptqkit.calibration_table", "version": 2,
      "CalibrationTable": {"x": {"amax": 1.0, "finite_count": 2, "zero_count": 0, "nan_count": 0,
                                 "inf_count": "many"}}})");
  const std::string message = ErrorOf(bad_entry);
  EXPECT_THAT(message, HasSubstr(bad_entry));
  EXPECT_THAT(message, HasSubstr("'x'"));
  EXPECT_THAT(message, HasSubstr("inf_count"));
}

TEST(CalibrationTableTest, SaveIntoMissingFolderFails) {
  CalibrationTable table;
  const std::string path = TempDir("save_fails") + "/no/such/dir/table.json";
  try {
    table.Save(path);
    FAIL() << "expected ptqkit::Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::kIo);
    EXPECT_THAT(e.what(), HasSubstr(path));
  }
}

}  // namespace
}  // namespace ptqkit::calib

namespace ptqkit::calib {
namespace {

TEST(CalibrationTableVersionTest, RejectsVersion1WithAClearMessage) {
  const std::string dir = TempDir("version1");
  const std::string path = dir + "/old.json";
  WriteText(path, R"({"format": "ptqkit.calibration_table", "version": 1, "CalibrationTable": {}})");
  const std::string error = ErrorOf(path);
  EXPECT_THAT(error, HasSubstr("version 1"));
  EXPECT_THAT(error, HasSubstr("calibrate again"));
}

TEST(CalibrationTableVersionTest, ZeroCountRoundTripsAndIsChecked) {
  const std::string dir = TempDir("zero_count");
  std::vector<float> v = {0.0f, -0.0f, 0.0f, 1.5f, -2.0f};
  CalibrationTable table;
  TensorStatistics stats("x");
  stats.Add(v.data(), v.size());
  EXPECT_EQ(stats.zero_count(), 3u);
  table.tensors.emplace("x", stats);
  table.Save(dir + "/t.json");
  EXPECT_EQ(CalibrationTable::Load(dir + "/t.json").tensors.at("x").zero_count(), 3u);
  nlohmann::json j = stats.ToJson();
  j["zero_count"] = 4;  // more than histogram bin 0 holds
  EXPECT_THROW(TensorStatistics::FromJson(j, "x"), Error);
}

}  // namespace
}  // namespace ptqkit::calib
