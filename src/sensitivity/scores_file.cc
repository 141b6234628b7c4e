#include "sensitivity/scores_file.h"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "base/atomic_file.h"
#include "base/json_file.h"
#include "ptqkit/error.h"
#include "sensitivity/metrics.h"

namespace ptqkit::sensitivity {
namespace {

using nlohmann::json;

void RequireFinite(const std::map<std::string, double>& values, const char* field) {
  for (const auto& [name, value] : values) {
    if (!std::isfinite(value)) {
      throw Error(
          fmt::format("sensitivity result: {} of '{}' is {}; only finite values can be "
                      "written (a probe without a finite score belongs in \"failed\")",
                      field, name, value));
    }
  }
}

const json& Field(const json& object, const char* key, const std::string& source) {
  if (!object.contains(key)) {
    throw Error(fmt::format("sensitivity scores '{}': missing field \"{}\"", source, key));
  }
  return object.at(key);
}

[[noreturn]] void BadField(const std::string& source, const std::string& key,
                           const std::string& expected, const json& found) {
  std::string shown = found.dump();
  if (shown.size() > 60) shown = shown.substr(0, 57) + "...";
  throw Error(fmt::format("sensitivity scores '{}': field \"{}\" must be {}, found {}", source, key,
                          expected, shown));
}

std::string StringField(const json& object, const char* key, const std::string& source) {
  const json& value = Field(object, key, source);
  if (!value.is_string()) BadField(source, key, "a string", value);
  return value.get<std::string>();
}

std::string OneOf(const json& object, const char* key, const std::string& source,
                  std::initializer_list<const char*> allowed) {
  const std::string value = StringField(object, key, source);
  std::string list;
  for (const char* a : allowed) {
    if (value == a) return value;
    list += fmt::format("{}\"{}\"", list.empty() ? "" : " or ", a);
  }
  BadField(source, key, list, object.at(key));
}

std::map<std::string, double> NumberMap(const json& value, const std::string& key,
                                        const std::string& source) {
  if (!value.is_object()) BadField(source, key, "an object of numbers", value);
  std::map<std::string, double> out;
  for (const auto& [name, number] : value.items()) {
    if (!number.is_number()) BadField(source, key + "." + name, "a number", number);
    out[name] = number.get<double>();
  }
  return out;
}

}  // namespace

nlohmann::json ToJson(const SensitivityResult& result) {
  RequireFinite(result.scores, "score");
  RequireFinite(result.timings, "timing");
  json failed = json::array();
  for (const auto& [target, reason] : result.failed) {
    failed.push_back({{"reason", reason}, {"target", target}});
  }
  json non_finite = json::array();
  for (const auto& [target, reason] : result.non_finite) {
    non_finite.push_back({{"reason", reason}, {"target", target}});
  }
  // nlohmann::json keeps object keys in a std::map: sorted, whatever the insertion order.
  json out{{"onnx_path", result.onnx_path},
              {"scores", result.scores},
              {"failed", std::move(failed)},
              {"num_non_finite", static_cast<int64_t>(result.non_finite.size())},
              {"non_finite", std::move(non_finite)},
              {"calibration_source", result.calibration_source},
              {"num_calibration_samples", result.num_calibration_samples},
              {"metric", result.metric},
              {"granularity", result.granularity},
              {"target_precision", result.target_precision},
              {"timings", result.timings},
              {"ptqkit_version", result.ptqkit_version}};
  if (!result.sampling.empty()) {
    json sampling = json::object();
    for (const auto& [target, s] : result.sampling) {
      if (!std::isfinite(s.low) || !std::isfinite(s.high)) continue;  // a non-finite probe's interval is meaningless
      sampling[target] = {{"samples", s.samples}, {"low", s.low}, {"high", s.high}, {"settled", s.settled}};
    }
    out["sampling"] = std::move(sampling);
  }
  return out;
}

SensitivityResult FromJson(const nlohmann::json& json, const std::string& source) {
  if (!json.is_object()) {
    throw Error(
        fmt::format("sensitivity scores '{}': expected a JSON object at the top level", source));
  }
  SensitivityResult r;
  r.onnx_path = StringField(json, "onnx_path", source);
  r.scores = NumberMap(Field(json, "scores", source), "scores", source);
  const nlohmann::json& failed = Field(json, "failed", source);
  if (!failed.is_array()) BadField(source, "failed", "a list", failed);
  for (const auto& entry : failed) {
    if (entry.is_string()) {
      r.failed.emplace_back(entry.get<std::string>(), "");
    } else if (entry.is_object() && entry.contains("target") && entry.at("target").is_string()) {
      const auto reason = entry.value("reason", nlohmann::json(""));
      r.failed.emplace_back(entry.at("target").get<std::string>(),
                            reason.is_string() ? reason.get<std::string>() : reason.dump());
    } else {
      BadField(source, "failed", "a list of {\"target\", \"reason\"} objects", entry);
    }
  }
  if (json.contains("non_finite")) {
    const nlohmann::json& nf = json.at("non_finite");
    if (!nf.is_array()) BadField(source, "non_finite", "a list", nf);
    for (const auto& entry : nf) {
      if (!entry.is_object() || !entry.contains("target") || !entry.at("target").is_string()) {
        BadField(source, "non_finite", "a list of {\"target\", \"reason\"} objects", entry);
      }
      const auto reason = entry.value("reason", nlohmann::json(""));
      r.non_finite.emplace_back(entry.at("target").get<std::string>(),
                                reason.is_string() ? reason.get<std::string>() : reason.dump());
    }
  }
  r.calibration_source = OneOf(json, "calibration_source", source, {"real", "synthetic"});
  const nlohmann::json& samples = Field(json, "num_calibration_samples", source);
  if (!samples.is_number_integer() || samples.get<int64_t>() < 0) {
    BadField(source, "num_calibration_samples", "a non-negative integer", samples);
  }
  r.num_calibration_samples = samples.get<int64_t>();
  r.metric = StringField(json, "metric", source);
  try {
    ParseMetric(r.metric);
  } catch (const Error& e) {
    throw Error(fmt::format("sensitivity scores '{}': field \"metric\": {}", source, e.what()));
  }
  r.granularity = OneOf(json, "granularity", source, {"op_type", "node"});
  r.target_precision = StringField(json, "target_precision", source);
  if (json.contains("timings")) r.timings = NumberMap(json.at("timings"), "timings", source);
  if (json.contains("sampling")) {
    const nlohmann::json& sampling = json.at("sampling");
    if (!sampling.is_object()) BadField(source, "sampling", "an object", sampling);
    for (const auto& item : sampling.items()) {
      // Not a structured binding: clang 14 cannot capture one in the lambda below.
      const std::string& target = item.key();
      const nlohmann::json& entry = item.value();
      const std::string key = "sampling." + target;
      if (!entry.is_object()) BadField(source, key, "an object", entry);
      TargetSampling s;
      const auto number = [&](const char* field) {
        if (!entry.contains(field) || !entry.at(field).is_number()) {
          BadField(source, key + "." + field, "a number", entry.value(field, nlohmann::json()));
        }
        return entry.at(field);
      };
      s.samples = number("samples").get<int64_t>();
      s.low = number("low").get<double>();
      s.high = number("high").get<double>();
      s.settled = entry.value("settled", std::string());
      r.sampling[target] = s;
    }
  }
  if (json.contains("ptqkit_version"))
    r.ptqkit_version = StringField(json, "ptqkit_version", source);
  return r;
}

std::string SerializeResult(const SensitivityResult& result) {
  try {
    return ToJson(result).dump(2) + "\n";
  } catch (const nlohmann::json::type_error& e) {
    // dump() refuses strings that are not UTF-8 (a node name from a foreign exporter).
    throw Error(fmt::format("sensitivity result cannot be written as JSON: {}", e.what()));
  }
}

void WriteResult(const SensitivityResult& result, const std::string& path) {
  WriteFileAtomically(path, SerializeResult(result));
}

SensitivityResult ReadResult(const std::string& path) {
  const nlohmann::json json = ReadJsonFile(path, "sensitivity scores");
  return FromJson(json, path);
}

}  // namespace ptqkit::sensitivity
