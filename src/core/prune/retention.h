#pragma once
// Which checkpoints prune keeps and which it deletes, and why: a pure
// function of the scanned checkpoints and the policy (docs/du-prune.md).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/prune/checkpoints.h"

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
};

/// The fate of one checkpoint.
enum class Decision { kKeep, kDelete };

/// One checkpoint in the plan.
struct PlannedCheckpoint {
  std::size_t index = 0;  ///< into CheckpointScan::checkpoints
  Decision decision = Decision::kKeep;
  std::vector<std::string> reasons;  ///< why kept (every protection that applies) or why deleted
};

/// The whole plan, oldest first.
struct RetentionPlan {
  std::vector<PlannedCheckpoint> items;
  std::string ordered_by;               ///< "step number" or "modification time"
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
