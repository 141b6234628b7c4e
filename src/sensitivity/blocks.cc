#include "sensitivity/blocks.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "base/pattern.h"
#include "ptqkit/error.h"
#include "sensitivity/rank_order.h"

namespace ptqkit::sensitivity {
namespace {

struct CompiledGroup {
  std::string name;
  std::vector<Pattern> patterns;
};

std::vector<CompiledGroup> Compile(
    const std::vector<std::pair<std::string, std::vector<std::string>>>& blocks) {
  std::vector<CompiledGroup> groups;
  std::set<std::string> seen;
  for (const auto& [name, patterns] : blocks) {
    if (!seen.insert(name).second) {
      throw Error(fmt::format("blocks: group '{}' is given twice", name));
    }
    CompiledGroup group{name, {}};
    for (const auto& pattern : patterns) {
      group.patterns.emplace_back(pattern, fmt::format("blocks: group '{}'", name));
    }
    groups.push_back(std::move(group));
  }
  return groups;
}

bool Matches(const CompiledGroup& group, const std::string& target) {
  return std::any_of(group.patterns.begin(), group.patterns.end(),
                     [&](const Pattern& re) { return re.FoundIn(target); });
}

// Fills the aggregates from members (already in rank order, so max is the first).
RankedEntry MakeEntry(std::string name, bool is_block,
                      const std::vector<std::pair<std::string, double>>& members, BlockAgg agg) {
  RankedEntry entry;
  entry.name = std::move(name);
  entry.is_block = is_block;
  for (const auto& [target, score] : members) {
    entry.members.push_back(target);
    entry.sum_score += score;
    entry.max_score = std::max(entry.max_score, score);
  }
  entry.mean_score = members.empty() ? 0.0 : entry.sum_score / static_cast<double>(members.size());
  switch (agg) {
    case BlockAgg::kSum:
      entry.score = entry.sum_score;
      break;
    case BlockAgg::kMax:
      entry.score = entry.max_score;
      break;
    case BlockAgg::kMean:
      entry.score = entry.mean_score;
      break;
  }
  return entry;
}

void SortEntries(std::vector<RankedEntry>& entries) {
  std::stable_sort(entries.begin(), entries.end(), [](const RankedEntry& a, const RankedEntry& b) {
    if (a.score != b.score || a.name != b.name) {
      return RanksBefore(a.score, a.name, b.score, b.name);
    }
    return a.is_block && !b.is_block;
  });
}

}  // namespace

BlockAgg ParseBlockAgg(std::string_view name) {
  if (name == "sum") return BlockAgg::kSum;
  if (name == "max") return BlockAgg::kMax;
  if (name == "mean") return BlockAgg::kMean;
  throw Error(fmt::format("unknown block_agg '{}' (expected one of: sum, max, mean)", name));
}

std::vector<RankedEntry> RankTargets(const std::map<std::string, double>& scores) {
  std::vector<RankedEntry> entries;
  for (const auto& member : RankByScore(scores)) {
    entries.push_back(MakeEntry(member.first, false, {member}, BlockAgg::kSum));
  }
  return entries;
}

std::vector<RankedEntry> RankBlocks(
    const std::map<std::string, double>& scores,
    const std::vector<std::pair<std::string, std::vector<std::string>>>& blocks, BlockAgg agg,
    std::vector<std::string>& warnings) {
  const std::vector<CompiledGroup> groups = Compile(blocks);
  std::vector<std::vector<std::pair<std::string, double>>> members(groups.size());
  std::vector<std::pair<std::string, double>> singletons;
  for (const auto& member : RankByScore(scores)) {
    const auto group = std::find_if(groups.begin(), groups.end(), [&](const CompiledGroup& g) {
      return Matches(g, member.first);
    });
    if (group == groups.end()) {
      singletons.push_back(member);
    } else {
      members[static_cast<size_t>(group - groups.begin())].push_back(member);
    }
  }
  std::vector<RankedEntry> entries;
  std::set<std::string> group_names;
  for (const auto& group : groups) group_names.insert(group.name);
  for (size_t g = 0; g < groups.size(); ++g) {
    if (members[g].empty()) {
      warnings.push_back(fmt::format(
          "blocks: group '{}' matches no scored target (its patterns match nothing, or earlier "
          "groups took every match)",
          groups[g].name));
      continue;
    }
    entries.push_back(MakeEntry(groups[g].name, true, members[g], agg));
  }
  for (const auto& singleton : singletons) {
    if (group_names.count(singleton.first) != 0) {
      warnings.push_back(fmt::format(
          "blocks: target '{}' has the name of a group but matches none of its patterns; it is "
          "ranked as a separate singleton",
          singleton.first));
    }
    entries.push_back(MakeEntry(singleton.first, false, {singleton}, agg));
  }
  SortEntries(entries);
  return entries;
}

}  // namespace ptqkit::sensitivity
