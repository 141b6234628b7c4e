#include "base/temporary_folder.h"

#include <fmt/format.h>
#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "ptqkit/error.h"

namespace ptqkit {

TemporaryFolder::TemporaryFolder(const std::string& prefix) {
  std::error_code ec;
  const std::filesystem::path base = std::filesystem::temp_directory_path(ec);
  std::string pattern = ((ec ? std::filesystem::path("/tmp") : base) / (prefix + "XXXXXX")).string();
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (mkdtemp(buffer.data()) == nullptr) {
    throw Error(fmt::format("cannot create a temporary folder '{}': {}", pattern, std::strerror(errno)),
                Error::Kind::kIo);
  }
  path_ = buffer.data();
}

TemporaryFolder::~TemporaryFolder() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);  // best effort: a destructor must not throw
}

}  // namespace ptqkit
