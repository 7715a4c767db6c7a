#pragma once
// The series a job saves into, read from its checkpoint directory for the
// capacity rule (capacity.h): the members as the retention planner sees them
// (complete or not, pinned or not) and the temps of dead saves.

#include <filesystem>
#include <string>

#include "core/context.h"
#include "core/error.h"
#include "core/series/capacity.h"
#include "core/series/checkpoints.h"
#include "core/series/retention.h"

namespace headroom {

/// Series `series` of a planned scan (an index into plan.series), newest member first,
/// with the bytes of every dead save temp of the directory as reclaimable, and those of a
/// save of the series still being written (its live temp, or its newest member cut short
/// and open) as saving_bytes, not as a member.
[[nodiscard]] SeriesOnDisk series_on_disk(const CheckpointScan& scan, const RetentionPlan& plan,
                                          std::size_t series);

/// The series written to last: the numbered series holding the newest checkpoint (by
/// mtime); nullopt when the plan has none. Names without a step number are not series.
[[nodiscard]] std::optional<std::size_t> active_series(const CheckpointScan& scan,
                                                       const RetentionPlan& plan);

/// Reads `dir` (no /proc scan, no settle interval) and returns its active series;
/// an empty SeriesOnDisk when it holds no checkpoint. Fails when `dir` cannot be read.
[[nodiscard]] Result<SeriesOnDisk> read_active_series(const Context& context,
                                                      const std::filesystem::path& dir);

}  // namespace headroom
