// The autotune state file: every candidate's timing and divergence, keyed by the set of nodes it
// keeps in float, so an interrupted search resumes where it stopped and a repeated run times
// nothing. The file names the model and settings it belongs to (a fingerprint); a state file of
// another model or other settings is not reused (with a warning) and is overwritten.
// Also the pattern cache: the decision for each group signature, reusable across models.
// Written atomically after every candidate. Not thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ptqkit/autotune.h"

namespace ptqkit::autotune {

struct CandidateRecord {
  std::optional<LatencySummary> latency;
  std::optional<double> divergence;
};

class SearchState {
 public:
  // `path` "": kept in memory only. Throws ptqkit::Error for a file that is not a state file.
  SearchState(std::string path, std::string fingerprint);

  // The key of a candidate: the FP32 model is "fp32"; a placement is the digest of its sorted
  // float-node names ("default" when none).
  static std::string Key(std::vector<std::string> in_float);

  const CandidateRecord* Find(const std::string& key) const;
  void PutLatency(const std::string& key, const LatencySummary& latency);
  void PutDivergence(const std::string& key, double divergence);
  // The FP32 model's per-node times (node_profile.h) that ordered the groups: kept so that a
  // resumed search visits the groups in the same order and finds its candidates in the file.
  const std::map<std::string, double>& node_ms() const { return node_ms_; }
  void PutNodeMs(std::map<std::string, double> node_ms);
  int loaded_candidates() const { return loaded_; }
  const std::string& path() const { return path_; }

 private:
  void Save() const;
  std::string path_;
  std::string fingerprint_;
  std::map<std::string, CandidateRecord> candidates_;
  std::map<std::string, double> node_ms_;
  int loaded_ = 0;
};

// Signature -> scheme name. A missing file is an empty cache; a malformed one is an error.
std::map<std::string, std::string> LoadPatternCache(const std::string& path);
void SavePatternCache(const std::string& path, const std::map<std::string, std::string>& decisions);

}  // namespace ptqkit::autotune
