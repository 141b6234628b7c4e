#include "base/io_guard.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <filesystem>
#include <optional>

#include "ptqkit/error.h"

namespace ptqkit {
namespace fs = std::filesystem;
namespace {

struct Identity {
  std::optional<std::pair<dev_t, ino_t>> inode;  // when the file exists (links followed)
  std::string resolved;                          // realpath of what exists, the rest appended
  bool operator==(const Identity& other) const {
    if (inode && other.inode) return *inode == *other.inode;
    return resolved == other.resolved;
  }
};

Identity IdentityOf(const std::string& path) {
  Identity id;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) id.inode = std::make_pair(st.st_dev, st.st_ino);
  std::error_code ec;
  fs::path resolved = fs::weakly_canonical(fs::absolute(path, ec), ec);
  id.resolved = ec ? fs::absolute(path).lexically_normal().string() : resolved.string();
  return id;
}

}  // namespace

void IoGuard::Input(const std::string& path, const std::string& role) {
  if (!path.empty()) inputs_.push_back({path, role});
}

void IoGuard::InputFolderFiles(const std::string& path, const std::string& role) {
  std::error_code ec;
  if (path.empty() || !fs::is_directory(path, ec)) return Input(path, role);
  for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code type_ec;
    if (it->is_regular_file(type_ec)) Input(it->path().string(), role);
  }
}

void IoGuard::Output(const std::string& path, const std::string& role) {
  if (!path.empty()) outputs_.push_back({path, role});
}

void IoGuard::Check() const {
  std::vector<Identity> in;
  for (const auto& e : inputs_) in.push_back(IdentityOf(e.path));
  std::vector<Identity> out;
  for (const auto& e : outputs_) out.push_back(IdentityOf(e.path));
  for (size_t o = 0; o < outputs_.size(); ++o) {
    for (size_t i = 0; i < inputs_.size(); ++i) {
      if (out[o] == in[i]) {
        throw Error(fmt::format("{} '{}' is the same file as {} '{}'; ptqkit never overwrites a file it reads, and "
                                "nothing was written",
                                outputs_[o].role, outputs_[o].path, inputs_[i].role, inputs_[i].path),
                    Error::Kind::kInvalidInput);
      }
    }
    for (size_t p = 0; p < o; ++p) {
      if (out[o] == out[p]) {
        throw Error(fmt::format("{} '{}' and {} '{}' are the same file; give them different paths (nothing was "
                                "written)",
                                outputs_[p].role, outputs_[p].path, outputs_[o].role, outputs_[o].path));
      }
    }
  }
}

}  // namespace ptqkit
