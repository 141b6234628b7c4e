// Helpers for the data-stage tests: a fresh temporary directory per test, and small file utilities.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "ptqkit/error.h"
#include "ptqkit/tensor.h"

namespace ptqkit::data::testing {

// A directory unique to the running test, emptied when the test starts.
inline std::filesystem::path TestDir() {
#ifdef PTQKIT_TEST_TMPDIR
  std::filesystem::path root = PTQKIT_TEST_TMPDIR;
#else
  std::filesystem::path root = std::filesystem::temp_directory_path() / "ptqkit_tests";
#endif
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::filesystem::path dir =
      root / "data" / (std::string(info->test_suite_name()) + "." + info->name());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

template <typename T>
HostTensor MakeTensor(DataType dtype, std::vector<int64_t> shape, const std::vector<T>& values) {
  HostTensor t(dtype, std::move(shape));
  EXPECT_EQ(t.bytes.size(), values.size() * sizeof(T));
  std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return t;
}

// float32 tensor whose element i is start + i.
inline HostTensor Iota(std::vector<int64_t> shape, float start = 0) {
  HostTensor t(DataType::kFloat, std::move(shape));
  for (int64_t i = 0; i < t.NumElements(); ++i) t.Data<float>()[i] = start + static_cast<float>(i);
  return t;
}

template <typename T>
std::vector<T> Values(const HostTensor& t) {
  std::vector<T> out(t.bytes.size() / sizeof(T));
  std::memcpy(out.data(), t.bytes.data(), t.bytes.size());
  return out;
}

inline std::string ReadFileBytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline void WriteFileBytes(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Runs `fn`, expects a ptqkit::Error, and returns its message ("" and a test failure otherwise).
inline std::string ErrorOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected ptqkit::Error, got std::exception: " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected ptqkit::Error, nothing was thrown";
  return "";
}

}  // namespace ptqkit::data::testing
