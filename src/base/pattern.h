// Pattern: the regular expressions users give ptqkit (node selectors, --blocks groups), compiled
// with RE2. RE2 matches in time linear in the name and never recurses, so no name length or
// pattern ('(a+)+$') can hang ptqkit or overflow its stack, as std::regex did. The syntax is RE2's
// (close to Perl/ECMAScript: classes, alternation, repetition, non-greedy, (?i); no
// backreferences, no lookaround), https://github.com/google/re2/wiki/Syntax.
// Immutable after construction; thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace re2 {
class RE2;
}

namespace ptqkit {

class Pattern {
 public:
  // Throws ptqkit::Error "<context>: '<text>' is not a valid regular expression (<why>)" when RE2
  // rejects the text (bad syntax, unsupported construct, or too large to compile).
  Pattern(const std::string& text, std::string_view context);
  Pattern(Pattern&&) noexcept;
  Pattern& operator=(Pattern&&) noexcept;
  ~Pattern();

  // Matches a prefix of `name` (anchored at the start, not at the end): the selector rule.
  bool MatchesFromStart(std::string_view name) const;
  // Matches anywhere in `name` (std::regex_search): the --blocks rule.
  bool FoundIn(std::string_view name) const;
  const std::string& text() const { return text_; }

 private:
  std::string text_;
  std::unique_ptr<re2::RE2> re_;
};

}  // namespace ptqkit
