// IoGuard: no file ptqkit writes may be a file it reads. A run lists its inputs (model, external
// data, calibration data, caches, scores, blocks) and its outputs (model, <model>.data, cache, log,
// JSON, HTML) and calls Check() before writing anything. Files are compared by identity, device
// and inode after following links, so a symlink, a hard link or "./a/../model.onnx" cannot slip
// through; outputs that do not exist yet are compared by their resolved path, which also catches
// two outputs given the same name.
// Not thread-safe; one guard per run.
#pragma once

#include <string>
#include <vector>

namespace ptqkit {

class IoGuard {
 public:
  // `role` names the file in messages, as the user gave it: "--onnx_path", "external data of the
  // model", "--log_file". Empty paths are ignored.
  void Input(const std::string& path, const std::string& role);
  // A calibration folder: every regular file in it (not recursive, as the reader).
  void InputFolderFiles(const std::string& path, const std::string& role);
  void Output(const std::string& path, const std::string& role);

  // Throws ptqkit::Error naming both roles and paths when an output is an input or two outputs
  // are the same file.
  void Check() const;

 private:
  struct Entry {
    std::string path;
    std::string role;
  };
  std::vector<Entry> inputs_;
  std::vector<Entry> outputs_;
};

}  // namespace ptqkit
