// Building blocks of ptqkit's self-contained HTML reports (sensitivity scan, quantize run): text
// escaping that keeps the file valid XHTML whatever a node is called, and table rows.
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ptqkit::html {

// The page style every report starts from (fonts, headings, tables, notes); reports append the
// rules of their own charts.
extern const char* const kBaseStyle;

// Text and attribute values: markup characters escaped; what XML 1.0 forbids (control
// characters, broken UTF-8) becomes U+FFFD so one odd node name cannot break the file.
std::string Escape(const std::string& text);
// One <tr> of escaped cells (<th> when header).
std::string Row(const std::vector<std::string>& cells, bool header = false);
// A two-column table of (key, value) rows.
std::string KeyValueTable(const std::vector<std::pair<std::string, std::string>>& rows);

}  // namespace ptqkit::html
