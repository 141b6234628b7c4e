// ReadJsonFile: read and parse a whole JSON file (calibration tables, sensitivity scores, block
// maps), with the one-line errors every reader of a user-supplied file owes: which file, which
// kind of file, what is wrong. Json is nlohmann::json or nlohmann::ordered_json (key order kept).
// Only regular files are read (base/input_file.h), and the parser's own exception text is
// rephrased: a number such as 1e999 that does not fit a double is named as such.
#pragma once

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "base/input_file.h"
#include "ptqkit/error.h"

namespace ptqkit {

// nlohmann's messages start with "[json.exception.parse_error.101] "; users need the rest.
inline std::string JsonLibraryMessage(const nlohmann::json::exception& e) {
  std::string text = e.what();
  if (!text.empty() && text.front() == '[') {
    const size_t end = text.find("] ");
    if (end != std::string::npos) text = text.substr(end + 2);
  }
  return text;
}

template <typename Json = nlohmann::json>
Json ReadJsonFile(const std::string& path, std::string_view what) {
  const std::string text = ReadWholeInputFile(path, what);
  try {
    return Json::parse(text);
  } catch (const nlohmann::json::out_of_range& e) {
    // Parsed again, only now, noting the last object key read: the number that does not fit is
    // named by its key (the parser's own message gives neither the key nor the position).
    std::string last_key;
    const auto remember_key = [&](int /*depth*/, nlohmann::json::parse_event_t event, Json& value) {
      if (event == nlohmann::json::parse_event_t::key && value.is_string()) last_key = value.template get<std::string>();
      return true;
    };
    try {
      const Json ignored = Json::parse(text, remember_key);
      (void)ignored;
    } catch (const nlohmann::json::exception&) {
      // Expected: it stops at the same number, and last_key is the key before it.
    }
    throw Error(fmt::format("{} '{}' holds a number outside the range of a double{} ({})", what, path,
                            last_key.empty() ? "" : fmt::format(" at '{}'", last_key), JsonLibraryMessage(e)));
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{} '{}' is not valid JSON: {}", what, path, JsonLibraryMessage(e)));
  }
}

}  // namespace ptqkit
