// ParseShapeList: the text of --calibration_shapes ("in:8x3x224x224,mask:8x128").
// Names are split from their shape at the last ':' because exported names often contain one
// ("input_1:0"); entries are separated by ',' or whitespace, so names cannot contain those.
#include <fmt/format.h>

#include <charconv>
#include <string_view>

#include "ptqkit/calibration.h"
#include "ptqkit/error.h"

namespace ptqkit {
namespace {

bool IsSeparator(char c) { return c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

[[noreturn]] void BadEntry(std::string_view entry, std::string_view why) {
  throw Error(
      fmt::format("--calibration_shapes: bad entry '{}': {} (expected name:dim0xdim1x..., e.g. "
                  "input:1x3x224x224)",
                  entry, why));
}

std::vector<int64_t> ParseDims(std::string_view entry, std::string_view text) {
  std::vector<int64_t> dims;
  size_t pos = 0;
  while (true) {
    const size_t x = text.find('x', pos);
    const std::string_view field =
        text.substr(pos, x == std::string_view::npos ? std::string_view::npos : x - pos);
    int64_t value = 0;
    const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), value);
    if (field.empty() || ec != std::errc() || end != field.data() + field.size()) {
      BadEntry(entry, fmt::format("'{}' is not a number", field));
    }
    if (value < 1) BadEntry(entry, "dims must be at least 1");
    dims.push_back(value);
    if (x == std::string_view::npos) return dims;
    pos = x + 1;
  }
}

}  // namespace

std::map<std::string, std::vector<int64_t>> ParseShapeList(const std::string& text) {
  std::map<std::string, std::vector<int64_t>> out;
  size_t pos = 0;
  while (pos < text.size()) {
    if (IsSeparator(text[pos])) {
      ++pos;
      continue;
    }
    size_t end = pos;
    while (end < text.size() && !IsSeparator(text[end])) ++end;
    const std::string_view entry = std::string_view(text).substr(pos, end - pos);
    pos = end;
    const size_t colon = entry.rfind(':');
    if (colon == std::string_view::npos) BadEntry(entry, "no ':' between name and shape");
    if (colon == 0) BadEntry(entry, "empty input name");
    const std::string name(entry.substr(0, colon));
    if (!out.emplace(name, ParseDims(entry, entry.substr(colon + 1))).second) {
      throw Error(fmt::format("--calibration_shapes: input '{}' is given twice", name));
    }
  }
  return out;
}

}  // namespace ptqkit

namespace ptqkit {

std::map<std::string, int64_t> ParseBatchAxisList(const std::string& text) {
  std::map<std::string, int64_t> out;
  std::string entry;
  auto flush = [&] {
    if (entry.empty()) return;
    const size_t colon = entry.rfind(':');
    int64_t axis = -1;
    bool ok = colon != std::string::npos && colon > 0 && colon + 1 < entry.size();
    if (ok) {
      try {
        size_t used = 0;
        axis = std::stoll(entry.substr(colon + 1), &used);
        ok = used == entry.size() - colon - 1 && axis >= 0;
      } catch (const std::exception&) {
        ok = false;
      }
    }
    if (!ok) {
      throw Error(fmt::format(
          "--calibration_batch_axis: bad entry '{}' (expected name:axis, e.g. state:1)", entry));
    }
    const std::string name = entry.substr(0, colon);
    if (!out.emplace(name, axis).second)
      throw Error(fmt::format("--calibration_batch_axis: input '{}' is given twice", name));
    entry.clear();
  };
  for (char c : text) {
    if (c == ',' || c == ' ') flush();
    else entry += c;
  }
  flush();
  return out;
}

}  // namespace ptqkit
