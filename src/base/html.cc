#include "base/html.h"

#include <fmt/format.h>

#include <cstdint>

namespace ptqkit::html {
namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 when it is not valid.
size_t Utf8Length(const std::string& s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b = byte(i);
  size_t length = 0;
  uint32_t code = 0;
  if (b < 0x80) return 1;
  if ((b & 0xE0) == 0xC0) {
    length = 2;
    code = b & 0x1F;
  } else if ((b & 0xF0) == 0xE0) {
    length = 3;
    code = b & 0x0F;
  } else if ((b & 0xF8) == 0xF0) {
    length = 4;
    code = b & 0x07;
  } else {
    return 0;
  }
  if (i + length > s.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    code = (code << 6) | (byte(i + k) & 0x3F);
  }
  const uint32_t min_code[] = {0, 0, 0x80, 0x800, 0x10000};
  if (code < min_code[length] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
  if (code == 0xFFFE || code == 0xFFFF) return 0;  // not XML characters
  return length;
}

}  // namespace

const char* const kBaseStyle = R"(body { font-family: sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; }
h2 { font-size: 1.15em; margin-top: 1.6em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 0.9em; }
th, td { padding: 2px 10px; text-align: left; border-bottom: 1px solid #eee; }
.note { color: #8a5a00; background: #fff6e0; padding: 6px 10px; }
.chart text { font-size: 11px; font-family: sans-serif; }
)";

// Text and attribute values: markup characters escaped; what XML 1.0 forbids (control
// characters, broken UTF-8) becomes U+FFFD so one odd node name cannot break the file.
std::string Escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    switch (c) {
      case '&':
        out += "&amp;";
        ++i;
        continue;
      case '<':
        out += "&lt;";
        ++i;
        continue;
      case '>':
        out += "&gt;";
        ++i;
        continue;
      case '"':
        out += "&quot;";
        ++i;
        continue;
      case '\'':
        out += "&#39;";
        ++i;
        continue;
      default:
        break;
    }
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 && c != '\t' && c != '\n' && c != '\r') {
      out += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    const size_t length = Utf8Length(text, i);
    if (length == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(text, i, length);
      i += length;
    }
  }
  return out;
}

std::string Row(const std::vector<std::string>& cells, bool header) {
  const char* tag = header ? "th" : "td";
  std::string out = "<tr>";
  for (const auto& cell : cells) out += fmt::format("<{0}>{1}</{0}>", tag, Escape(cell));
  return out + "</tr>\n";
}

std::string KeyValueTable(const std::vector<std::pair<std::string, std::string>>& rows) {
  std::string out = "<table class=\"kv\">\n";
  for (const auto& [key, value] : rows) {
    out += fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", Escape(key), Escape(value));
  }
  return out + "</table>\n";
}

}  // namespace ptqkit::html
