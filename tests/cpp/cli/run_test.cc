// The command line's contract: exit codes 0 / 1 / 2 and errors in ptqkit's words (README "Exit codes").
#include "cli/run.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

namespace ptqkit::cli {
namespace {

struct Outcome {
  int code;
  std::string err;
};

Outcome RunPtqkit(std::vector<const char*> args) {
  args.insert(args.begin(), "ptqkit");
  testing::internal::CaptureStderr();
  testing::internal::CaptureStdout();
  const int code = RunCommandLine(static_cast<int>(args.size()), args.data());
  testing::internal::GetCapturedStdout();
  return {code, testing::internal::GetCapturedStderr()};
}

TEST(CommandLine, VersionSucceeds) { EXPECT_EQ(RunPtqkit({"--version"}).code, 0); }

TEST(CommandLine, AMisspelledSubcommandIsNamedWithTheNearestOne) {
  const Outcome r = RunPtqkit({"quantise", "--onnx_path", "m.onnx"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("quantise"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("quantize"), std::string::npos) << r.err;
}

TEST(CommandLine, NoSubcommandIsAUsageError) { EXPECT_EQ(RunPtqkit({}).code, 2); }

TEST(CommandLine, AnUnknownOptionIsAUsageError) {
  const Outcome r = RunPtqkit({"quantize", "--onnx_path", "m.onnx", "--no_such_option"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("no_such_option"), std::string::npos) << r.err;
}

TEST(CommandLine, AMissingModelIsARefusalNamingTheFile) {
  const std::string model = (std::filesystem::temp_directory_path() / "ptqkit_test_model.onnx").string();
  std::filesystem::remove(model);
  const Outcome r = RunPtqkit({"quantize", "--onnx_path", model.c_str()});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("ptqkit_test_model.onnx"), std::string::npos) << r.err;
}

TEST(CommandLine, AChoiceOutsideTheTableIsRefused) {
  const Outcome r = RunPtqkit({"quantize", "--onnx_path", "m.onnx", "--calibration_method", "minmax"});
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("minmax"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ptqkit::cli
