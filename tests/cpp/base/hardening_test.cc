// Unit tests of the hardening pieces (issue 10): IoGuard, OpenInputFile, Pattern (RE2),
// memory checks, StripOrtInternals, CheckAcyclic. The end-to-end cases are in
// tests/python/test_hostile_inputs.py; these also run under ASan/UBSan in scripts/test.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "base/input_file.h"
#include "base/io_guard.h"
#include "base/memory_limit.h"
#include "base/pattern.h"
#include "onnx/graph_cycles.h"
#include "ptqkit/error.h"
#include "runtime/ort_message.h"

namespace ptqkit {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

fs::path Dir(const std::string& name) {
  const fs::path dir = fs::path(PTQKIT_TEST_TMPDIR) / "hardening" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void Touch(const fs::path& p, const std::string& text = "x") { std::ofstream(p) << text; }

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(IoGuardTest, RefusesAnOutputThatIsAnInputThroughAnyAlias) {
  const fs::path d = Dir("guard");
  Touch(d / "model.onnx");
  fs::create_symlink(d / "model.onnx", d / "link.onnx");
  fs::create_hard_link(d / "model.onnx", d / "hard.onnx");
  for (const fs::path& out : {d / "model.onnx", d / "link.onnx", d / "hard.onnx", d / "sub" / ".." / "model.onnx"}) {
    IoGuard g;
    g.Input((d / "model.onnx").string(), "--onnx_path");
    g.Output(out.string(), "--output_path");
    EXPECT_THAT(ErrorOf([&] { g.Check(); }), HasSubstr("same file")) << out;
  }
  IoGuard fine;
  fine.Input((d / "model.onnx").string(), "--onnx_path");
  fine.Output((d / "new.onnx").string(), "--output_path");
  EXPECT_NO_THROW(fine.Check());
}

TEST(IoGuardTest, RefusesTwoOutputsWithOneName) {
  const fs::path d = Dir("guard2");
  IoGuard g;
  g.Output((d / "a.json").string(), "--output_json");
  g.Output((d / "." / "a.json").string(), "--report");
  EXPECT_THAT(ErrorOf([&] { g.Check(); }), HasSubstr("are the same file"));
}

TEST(InputFileTest, RefusesPipesAndDevicesWithoutBlocking) {
  const fs::path d = Dir("special");
  ASSERT_EQ(::mkfifo((d / "pipe").c_str(), 0600), 0);
  EXPECT_THAT(ErrorOf([&] { OpenInputFile((d / "pipe").string(), "model file"); }), HasSubstr("named pipe"));
  EXPECT_THAT(ErrorOf([&] { OpenInputFile("/dev/zero", "model file"); }), HasSubstr("character device"));
  EXPECT_THAT(ErrorOf([&] { OpenInputFile(d.string(), "model file"); }), HasSubstr("directory"));
  EXPECT_THAT(ErrorOf([&] { OpenInputFile((d / "none").string(), "model file"); }), HasSubstr("does not exist"));
  Touch(d / "ok", "hello");
  EXPECT_EQ(ReadWholeInputFile((d / "ok").string(), "f"), "hello");
  EXPECT_THAT(ErrorOf([&] { ReadWholeInputFile((d / "ok").string(), "f", 3); }), HasSubstr("5 bytes"));
}

TEST(PatternTest, LinearTimeOnCatastrophicPatterns) {
  const auto start = std::chrono::steady_clock::now();
  const Pattern p("(a+)+$", "test");
  EXPECT_FALSE(p.FoundIn(std::string(100000, 'a') + "!"));
  const Pattern any(".*c", "test");
  EXPECT_TRUE(any.MatchesFromStart(std::string(1000000, 'b') + "c"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(PatternTest, AnchoringAndErrors) {
  const Pattern p("/l/MatMul", "test");
  EXPECT_TRUE(p.MatchesFromStart("/l/MatMul_1"));
  EXPECT_FALSE(p.MatchesFromStart("x/l/MatMul"));
  EXPECT_TRUE(p.FoundIn("x/l/MatMul"));
  EXPECT_THAT(ErrorOf([] { Pattern("(", "--nodes_to_exclude"); }), HasSubstr("--nodes_to_exclude: '('"));
  EXPECT_THAT(ErrorOf([] { Pattern("(a)\\1", "g"); }), HasSubstr("not a valid regular expression"));
}

TEST(MemoryLimitTest, OverflowAndHugeSizesAreRefused) {
  EXPECT_FALSE(CheckedBytes({int64_t{1} << 62, 4}, 4).has_value());
  EXPECT_FALSE(CheckedBytes({-1, 4}, 4).has_value());
  EXPECT_EQ(CheckedBytes({3, 4}, 4), 48);
  EXPECT_THAT(ErrorOf([] { RequireMemory(std::nullopt, "input 'x'"); }), HasSubstr("input 'x' needs more than"));
  EXPECT_THAT(ErrorOf([] { RequireMemory(int64_t{1} << 62, "input 'x'"); }), HasSubstr("4.0 EiB"));
  EXPECT_NO_THROW(RequireMemory(1024, "small"));
}

TEST(OrtMessageTest, SourcePathsAndSignaturesAreStripped) {
  EXPECT_EQ(StripOrtInternals("Status Message: matmul_helper.h:59 Compute MatMul dimension mismatch"),
            "Status Message: MatMul dimension mismatch");
  EXPECT_EQ(StripOrtInternals("Load model failed:/onnxruntime_src/onnxruntime/core/graph/model.cc:180 "
                              "onnxruntime::Model::Model(ModelProto&&, const PathString&) Unsupported model IR "
                              "version: 99"),
            "Load model failed: Unsupported model IR version: 99");
  EXPECT_EQ(StripOrtInternals("/onnxruntime_src/a/conv.cc:98 onnxruntime::common::Status "
                              "onnxruntime::Conv<T>::Compute(onnxruntime::OpKernelContext*) const [with T = float] "
                              "X num_dims does not match W num_dims."),
            "X num_dims does not match W num_dims.");
  EXPECT_EQ(StripOrtInternals("plain message, a.b: 3"), "plain message, a.b: 3");
}

TEST(GraphCyclesTest, NamesANodeOnTheCycle) {
  onnx::GraphProto g;
  auto add = [&](const std::string& name, const std::string& in, const std::string& out) {
    auto* n = g.add_node();
    n->set_name(name);
    n->set_op_type("Relu");
    n->add_input(in);
    n->add_output(out);
  };
  add("a", "x", "t1");
  add("b", "t3", "t2");
  add("c", "t2", "t3");
  add("d", "t3", "y");
  const std::string message = ErrorOf([&] { onnxio::CheckAcyclic(g, "m.onnx"); });
  EXPECT_THAT(message, HasSubstr("cycle"));
  EXPECT_THAT(message, ::testing::AnyOf(HasSubstr("node 'b'"), HasSubstr("node 'c'")));
  g.mutable_node(1)->set_input(0, "t1");
  EXPECT_NO_THROW(onnxio::CheckAcyclic(g, "m.onnx"));
}

}  // namespace
}  // namespace ptqkit
