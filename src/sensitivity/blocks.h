// Blocks: grouping per-target scores into architectural groups for the picker (see
// include/ptqkit/picker.h). A target joins the first group, in the order given, that has a regex
// found in its name; unmatched targets become singleton groups. A singleton keeps its own entry
// even when its name equals a group's name (is_block tells them apart), so a node called
// "blocks.1" that the "blocks.1" patterns do not match is never merged into that group.
// Pure functions; thread-safe.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ptqkit/picker.h"

namespace ptqkit::sensitivity {

enum class BlockAgg { kSum, kMax, kMean };

// REQUIRES: name is sum, max or mean. Throws ptqkit::Error listing them otherwise.
BlockAgg ParseBlockAgg(std::string_view name);

// One entry per target (no blocks), in rank order. REQUIRES: scores finite and >= 0.
std::vector<RankedEntry> RankTargets(const std::map<std::string, double>& scores);

// Groups and singletons, in rank order (score descending, then name, then groups before
// singletons of the same name). Groups that match no scored target are dropped with a warning;
// so is a node whose name collides with a group it does not belong to (it is kept as a singleton).
// REQUIRES: scores finite and >= 0. Throws ptqkit::Error for an invalid regex (naming the group
// and the pattern) or a group name given twice.
std::vector<RankedEntry> RankBlocks(
    const std::map<std::string, double>& scores,
    const std::vector<std::pair<std::string, std::vector<std::string>>>& blocks, BlockAgg agg,
    std::vector<std::string>& warnings);

}  // namespace ptqkit::sensitivity
