#include "base/pattern.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include "ptqkit/error.h"

namespace ptqkit {

Pattern::Pattern(const std::string& text, std::string_view context) : text_(text) {
  RE2::Options options;
  options.set_log_errors(false);  // the error goes into ptqkit's message, not to stderr
  re_ = std::make_unique<re2::RE2>(text, options);
  if (!re_->ok()) {
    throw Error(fmt::format("{}: '{}' is not a valid regular expression ({}; ptqkit uses RE2 syntax)", context, text,
                            re_->error()));
  }
}

Pattern::Pattern(Pattern&&) noexcept = default;
Pattern& Pattern::operator=(Pattern&&) noexcept = default;
Pattern::~Pattern() = default;

bool Pattern::MatchesFromStart(std::string_view name) const {
  return re_->Match(name, 0, name.size(), RE2::ANCHOR_START, nullptr, 0);
}

bool Pattern::FoundIn(std::string_view name) const {
  return re_->Match(name, 0, name.size(), RE2::UNANCHORED, nullptr, 0);
}

}  // namespace ptqkit
