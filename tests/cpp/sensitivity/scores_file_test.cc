#include "sensitivity/scores_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ptqkit/error.h"

namespace ptqkit::sensitivity {
namespace {

using ::testing::HasSubstr;

std::string TempDir(const std::string& test) {
  const std::string dir = std::string(PTQKIT_TEST_TMPDIR) + "/scores_file_test/" + test;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

SensitivityResult Example() {
  SensitivityResult r;
  r.onnx_path = "models/m.onnx";
  r.scores = {{"Mul", 1.0 / 3.0}, {"Add", 2.848}, {"Conv", 0.1 + 0.2}, {"Relu", 0.0}};
  r.failed = {{"Cast", "no Q/DQ inserted"}};
  r.calibration_source = "real";
  r.num_calibration_samples = 500;
  r.metric = "kl_div";
  r.granularity = "op_type";
  r.target_precision = "int8";
  r.timings = {{"calibration", 1.5}, {"probes", 12.25}};
  r.ptqkit_version = "0.1.0";
  return r;
}

std::string ErrorOf(const std::string& path) {
  try {
    ReadResult(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ScoresFileTest, SerializationIsExactAndSorted) {
  SensitivityResult r = Example();
  r.scores = {{"Mul", 0.5}, {"Add", 2.848}};
  r.timings = {{"probes", 12.25}};
  const std::string expected = R"({
  "calibration_source": "real",
  "failed": [
    {
      "reason": "no Q/DQ inserted",
      "target": "Cast"
    }
  ],
  "granularity": "op_type",
  "metric": "kl_div",
  "non_finite": [],
  "num_calibration_samples": 500,
  "num_non_finite": 0,
  "onnx_path": "models/m.onnx",
  "ptqkit_version": "0.1.0",
  "scores": {
    "Add": 2.848,
    "Mul": 0.5
  },
  "target_precision": "int8",
  "timings": {
    "probes": 12.25
  }
}
)";
  EXPECT_EQ(SerializeResult(r), expected);
}

TEST(ScoresFileTest, RoundTripIsExactAndByteStable) {
  const std::string dir = TempDir("round_trip");
  const SensitivityResult original = Example();
  WriteResult(original, dir + "/a.sensitivity.json");
  const SensitivityResult read = ReadResult(dir + "/a.sensitivity.json");
  EXPECT_EQ(read.onnx_path, original.onnx_path);
  EXPECT_EQ(read.scores, original.scores);  // exact doubles, e.g. 1/3 and 0.1 + 0.2
  EXPECT_EQ(read.failed, original.failed);
  EXPECT_EQ(read.calibration_source, original.calibration_source);
  EXPECT_EQ(read.num_calibration_samples, original.num_calibration_samples);
  EXPECT_EQ(read.metric, original.metric);
  EXPECT_EQ(read.granularity, original.granularity);
  EXPECT_EQ(read.target_precision, original.target_precision);
  EXPECT_EQ(read.timings, original.timings);
  EXPECT_EQ(read.ptqkit_version, original.ptqkit_version);
  WriteResult(read, dir + "/b.sensitivity.json");
  EXPECT_EQ(ReadBytes(dir + "/a.sensitivity.json"), ReadBytes(dir + "/b.sensitivity.json"));
  // Nothing but the two outputs is left in the folder (the writes went through temp files).
  int files = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir)) ++files;
  EXPECT_EQ(files, 2);
}

TEST(ScoresFileTest, NonFiniteProbesRoundTripWithTheLargestFiniteScore) {
  SensitivityResult r = Example();
  r.scores = {{"Sqrt", kNonFiniteScore}, {"Add", 0.5}};
  r.non_finite = {{"Sqrt", "non-finite outputs: output 'logits' NaN: 8 of 8 values"}};
  const std::string text = SerializeResult(r);
  EXPECT_THAT(text, HasSubstr("\"Sqrt\": 1.7976931348623157e+308"));
  EXPECT_THAT(text, HasSubstr("\"num_non_finite\": 1"));
  const SensitivityResult read = FromJson(nlohmann::json::parse(text), "s.json");
  EXPECT_EQ(read.scores.at("Sqrt"), kNonFiniteScore);
  EXPECT_EQ(read.non_finite, r.non_finite);
  EXPECT_EQ(SerializeResult(read), text);
}

TEST(ScoresFileTest, NonFiniteScoresAreRefusedNamingTheTarget) {
  SensitivityResult r = Example();
  r.scores["Softmax"] = std::nan("");
  try {
    SerializeResult(r);
    FAIL() << "expected ptqkit::Error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("'Softmax'"));
    EXPECT_THAT(e.what(), HasSubstr("failed"));
  }
}

TEST(ScoresFileTest, MissingFieldIsNamedWithTheFile) {
  const std::string dir = TempDir("missing_field");
  nlohmann::json json = ToJson(Example());
  json.erase("granularity");
  WriteText(dir + "/s.json", json.dump());
  const std::string error = ErrorOf(dir + "/s.json");
  EXPECT_THAT(error, HasSubstr(dir + "/s.json"));
  EXPECT_THAT(error, HasSubstr("missing field \"granularity\""));
}

TEST(ScoresFileTest, BadFieldsAreNamed) {
  const std::string dir = TempDir("bad_fields");
  struct Case {
    const char* key;
    nlohmann::json value;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"granularity", "layer", "field \"granularity\" must be \"op_type\" or \"node\""},
      {"calibration_source", "fake",
       "field \"calibration_source\" must be \"real\" or \"synthetic\""},
      {"metric", "l2", "unknown metric 'l2'"},
      {"scores", nlohmann::json{{"Add", "high"}}, "field \"scores.Add\" must be a number"},
      {"scores", nlohmann::json::array(), "field \"scores\" must be an object of numbers"},
      {"num_calibration_samples", -1, "must be a non-negative integer"},
      {"failed", nlohmann::json{{{"reason", "x"}}}, "field \"failed\" must be a list of"},
  };
  for (const Case& c : cases) {
    nlohmann::json json = ToJson(Example());
    json[c.key] = c.value;
    WriteText(dir + "/s.json", json.dump());
    const std::string error = ErrorOf(dir + "/s.json");
    EXPECT_THAT(error, HasSubstr(c.message)) << c.key;
    EXPECT_THAT(error, HasSubstr("s.json")) << c.key;
  }
}

TEST(ScoresFileTest, NotJsonAndMissingFileAreClearErrors) {
  const std::string dir = TempDir("not_json");
  WriteText(dir + "/s.json", "{ not json");
  EXPECT_THAT(ErrorOf(dir + "/s.json"), HasSubstr("is not valid JSON"));
  try {
    ReadResult(dir + "/absent.json");
    FAIL() << "expected ptqkit::Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::kIo);
    EXPECT_THAT(e.what(), HasSubstr("absent.json"));
  }
}

TEST(ScoresFileTest, AcceptsPlainFailedNamesAndNoOptionalFields) {
  nlohmann::json json = ToJson(Example());
  json.erase("timings");
  json.erase("ptqkit_version");
  json["failed"] = {"Cast", "Shape"};
  json["something_new"] = 1;
  const SensitivityResult r = FromJson(json, "inline");
  ASSERT_EQ(r.failed.size(), 2u);
  EXPECT_EQ(r.failed[1].first, "Shape");
  EXPECT_EQ(r.failed[1].second, "");
  EXPECT_TRUE(r.timings.empty());
  EXPECT_EQ(r.ptqkit_version, "");
}

TEST(ScoresFileTest, UnwritableFolderIsAnIoError) {
  try {
    WriteResult(Example(), std::string(PTQKIT_TEST_TMPDIR) + "/no/such/folder/s.json");
    FAIL() << "expected ptqkit::Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::kIo);
  }
}

}  // namespace
}  // namespace ptqkit::sensitivity
