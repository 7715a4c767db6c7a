#pragma once
// Is a checkpoint complete? Not "it stopped growing": a save that died of
// ENOSPC stops growing too. A checkpoint is complete when it has what its
// siblings (the other members of its series) have: the same files (a Hugging
// Face checkpoint-N/ holds model, optimizer, scheduler, RNG and trainer_state.json),
// a size within reason of theirs, an intact file format (contents.h), and it is
// not newer than the save DeepSpeed's `latest` file names. Pure; the scan
// gathers the facts.

#include <string>
#include <vector>

#include "core/series/checkpoints.h"

namespace headroom {

/// A member smaller than this share of its siblings' median size is cut short.
/// Generous on purpose: a first checkpoint saved before the optimizer has state
/// (Adam's two moments) is a third of the later ones and is still complete.
inline constexpr double kIncompleteSizeShare = 0.25;

/// For each member of one series (indices into `checkpoints`), why it lacks what
/// its siblings have; "" for a member that lacks nothing.
[[nodiscard]] std::vector<std::string> judge_completeness(
    const std::vector<Checkpoint>& checkpoints, const std::vector<std::size_t>& series);

}  // namespace headroom
