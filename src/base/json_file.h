// ReadJsonFile: read and parse a whole JSON file (calibration tables, sensitivity scores, block
// maps), with the one-line errors every reader of a user-supplied file owes: which file, which
// kind of file, what is wrong. Json is nlohmann::json or nlohmann::ordered_json (key order kept).
#pragma once

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <string_view>

#include "ptqkit/error.h"

namespace ptqkit {

template <typename Json = nlohmann::json>
Json ReadJsonFile(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("cannot read {} '{}'", what, path), Error::Kind::kIo);
  std::stringstream buffer;
  buffer << in.rdbuf();
  try {
    return Json::parse(buffer.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(fmt::format("{} '{}' is not valid JSON: {}", what, path, e.what()));
  }
}

}  // namespace ptqkit
