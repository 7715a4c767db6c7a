#pragma once
// Which checkpoints prune keeps and which it deletes, and why: a pure
// function of the scanned checkpoints and the policy (docs/du-prune.md).
// The one planner of retention: `headroom prune` and headroom.save_checkpoint
// (through the Python binding) both decide with it.
//
// Checkpoints are grouped into series (series_template: the names that share
// everything but the step, epoch and metric values); the policy applies to each
// series on its own. A checkpoint is complete when nothing is writing it and it
// has what its siblings have (completeness.h); only complete ones count towards
// --keep-last, and no incomplete one can push a complete one out.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/series/checkpoints.h"

namespace headroom {

/// Whether a lower or a higher metric value is better.
enum class MetricMode { kAuto, kMin, kMax };

/// The retention policy from the command line.
struct RetentionPolicy {
  std::size_t keep_last = 1;  ///< the N newest complete checkpoints
  std::size_t keep_best = 0;  ///< the N best by `metric`
  std::string metric;         ///< empty: the one metric the names carry
  MetricMode mode = MetricMode::kAuto;
  std::uint64_t keep_every = 0;  ///< keep steps that are multiples of K; 0: off
  /// Treat every checkpoint as one series named this (headroom.save_checkpoint's
  /// pattern=, a glob); empty: series by name template.
  std::string one_series;
  /// The checkpoint just written (headroom.save_checkpoint): the newest of its series
  /// whatever its number says (a restarted run saves step 100 beside an old step 900).
  std::string just_saved;
};

/// The fate of one checkpoint.
enum class Decision { kKeep, kDelete };

/// One checkpoint in the plan.
struct PlannedCheckpoint {
  std::size_t index = 0;  ///< into CheckpointScan::checkpoints
  Decision decision = Decision::kKeep;
  std::vector<std::string> reasons;  ///< why kept (every protection that applies) or why deleted
  std::size_t series = 0;            ///< into RetentionPlan::series; kNoSeries for a save temp
  bool complete = false;             ///< counts as a complete checkpoint of its series
  std::string incomplete;            ///< why not complete; empty when complete
  /// Kept whatever --keep-last says: in use, being written, named, best, --keep-every.
  bool pinned = false;
};

/// PlannedCheckpoint::series of a save temp, which belongs to no series.
inline constexpr std::size_t kNoSeries = static_cast<std::size_t>(-1);

/// One series in the plan.
struct SeriesPlan {
  std::string name;        ///< the template, e.g. "checkpoint-{N}/", or the glob
  std::string ordered_by;  ///< "step number" or "modification time"
  std::size_t members = 0;
  std::optional<std::size_t> newest_complete;  ///< index into CheckpointScan::checkpoints
};

/// The whole plan: series by series, each oldest first, then the save temps.
struct RetentionPlan {
  std::vector<PlannedCheckpoint> items;
  std::vector<SeriesPlan> series;
  std::string ordered_by;               ///< of the series: "step number" or "modification time"
  std::string metric;                   ///< the --keep-best metric, resolved
  MetricMode mode = MetricMode::kAuto;  ///< resolved to kMin or kMax when keep_best > 0
  std::uint64_t delete_bytes = 0;       ///< disk bytes the deletions free
  std::size_t deletions = 0;
};

/// The direction of a metric from its name: loss/error-like -> kMin,
/// accuracy/score-like -> kMax, otherwise kAuto (unknown).
[[nodiscard]] MetricMode guess_metric_mode(std::string_view metric);

/// Decides every checkpoint. Fails when --keep-best cannot be resolved
/// (no metric in names, several without --metric, or an unknown direction).
[[nodiscard]] Result<RetentionPlan> plan_retention(const std::vector<Checkpoint>& checkpoints,
                                                   const RetentionPolicy& policy);

}  // namespace headroom
