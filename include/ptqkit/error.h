// ptqkit::Error is the one exception type the library throws for anything a user can get wrong
// or that the environment denies: bad model, bad data, bad option, missing file, unwritable
// output, ONNX Runtime failures. Its message names the file, node, tensor or option at fault and
// what was expected, in one line, so the CLI can print it as is.
//
// Kind lets callers (the CLI, the Python binding) map errors without parsing messages:
// kInvalidInput for what the user supplied, kIo for the file system, kRuntime for inference.
#pragma once

#include <stdexcept>
#include <string>

namespace ptqkit {

class Error : public std::runtime_error {
 public:
  enum class Kind { kInvalidInput, kIo, kRuntime, kUnsupported };

  explicit Error(const std::string& message, Kind kind = Kind::kInvalidInput)
      : std::runtime_error(message), kind_(kind) {}

  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

}  // namespace ptqkit
