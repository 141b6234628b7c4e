// The HTML report of a sensitivity scan (and, when given, of the exclusion picked from it): one
// self-contained HTML5 file a person opens instead of reading JSON. It holds the run's settings,
// the ranking as an inline SVG horizontal bar chart (excluded targets highlighted, the exclusion
// cut drawn as a dashed line when the selection is a prefix of the target ranking), the block
// ranking (table and chart) when blocks were used, the exclusion summary, failed targets,
// warnings and timings.
// No scripts, no external resources, no timestamps (same inputs, same bytes). The markup is
// XHTML-compatible (every element closed, attributes quoted, text escaped, invalid UTF-8 and
// control characters replaced) so XML parsers accept it.
// Pure function; thread-safe.
#pragma once

#include <map>
#include <string>

#include "ptqkit/picker.h"
#include "sensitivity/scores_file.h"

namespace ptqkit::sensitivity {

// `pick` may be null (a scan without a picked exclusion). `settings` are shown as given, in key
// order (e.g. the command line's options).
std::string RenderHtmlReport(const SensitivityResult& result, const PickResult* pick,
                             const std::map<std::string, std::string>& settings);

}  // namespace ptqkit::sensitivity
