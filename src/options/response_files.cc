#include "options/response_files.h"

#include "base/input_file.h"

namespace ptqkit::options {
namespace {

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) lines.push_back(std::move(line));
    start = end + 1;
  }
  return lines;
}

}  // namespace

std::vector<std::string> ReadListFile(const std::string& path, const std::string& option) {
  return Lines(ReadWholeInputFile(path, option, int64_t{256} << 20));
}

std::vector<std::string> ExpandResponseFiles(int argc, const char* const* argv) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.size() > 1 && arg[0] == '@') {
      for (auto& line : ReadListFile(arg.substr(1), "response file")) args.push_back(std::move(line));
    } else {
      args.push_back(arg);
    }
  }
  return args;
}

}  // namespace ptqkit::options
