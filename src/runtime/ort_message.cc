#include "runtime/ort_message.h"

#include <cctype>

namespace ptqkit {
namespace {

bool IsPathChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '_' || c == '-' || c == '.' || c == '+';
}

// Length of a "path/file.cc:123" or "file.h:45" token at `at`, or 0.
size_t SourceLocationLength(std::string_view text, size_t at) {
  size_t end = at;
  while (end < text.size() && IsPathChar(text[end])) ++end;
  const std::string_view path = text.substr(at, end - at);
  const bool source = path.ends_with(".cc") || path.ends_with(".cpp") || path.ends_with(".h") || path.ends_with(".cu");
  if (!source || path.size() < 4) return 0;
  if (end >= text.size() || text[end] != ':') return 0;
  size_t digits = end + 1;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  return digits > end + 1 ? digits - at : 0;
}

// After a source location ORT prints the failing function's signature: "<ret> <name>(<args>)
// [const] [[with T = ...]]". Returns its length from `at` (at a non-space), or 0 if what follows
// does not look like one (then nothing is removed).
size_t SignatureLength(std::string_view text, size_t at) {
  const size_t open = text.find('(', at);
  if (open == std::string_view::npos) return 0;
  // A C++ signature has a qualified name (::) before its parenthesis and no sentence punctuation.
  const std::string_view head = text.substr(at, open - at);
  if (head.find("::") == std::string_view::npos || head.find(". ") != std::string_view::npos) return 0;
  int depth = 0;
  size_t i = open;
  for (; i < text.size(); ++i) {
    if (text[i] == '(') ++depth;
    if (text[i] == ')' && --depth == 0) break;
  }
  if (i >= text.size()) return 0;
  ++i;
  if (text.substr(i).starts_with(" const")) i += 6;
  if (text.substr(i).starts_with(" [with ")) {
    const size_t close = text.find(']', i);
    if (close != std::string_view::npos) i = close + 1;
  }
  return i - at;
}

}  // namespace

std::string StripOrtInternals(std::string_view message) {
  std::string out;
  size_t i = 0;
  while (i < message.size()) {
    const bool token_start = i == 0 || !IsPathChar(message[i - 1]);
    const size_t location = token_start ? SourceLocationLength(message, i) : 0;
    if (location == 0) {
      out += message[i++];
      continue;
    }
    i += location;
    while (i < message.size() && message[i] == ' ') ++i;
    const size_t signature = SignatureLength(message, i);
    if (signature > 0) {
      i += signature;
    } else {
      // The short form names the function alone: "matmul_helper.h:59 Compute MatMul dimension ...".
      size_t end = i;
      while (end < message.size() && (std::isalnum(static_cast<unsigned char>(message[end])) || message[end] == '_' ||
                                      message[end] == ':')) {
        ++end;
      }
      if (end < message.size() && message[end] == ' ') i = end;
    }
    while (i < message.size() && message[i] == ' ') ++i;
    if (!out.empty() && out.back() != ' ') out += ' ';
  }
  return out;
}

}  // namespace ptqkit
