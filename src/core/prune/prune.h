#pragma once
// `headroom prune`: scan a checkpoint directory, plan what the retention
// policy keeps, and (only when asked) remove the rest safely.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/error.h"
#include "core/prune/removal.h"
#include "core/series/checkpoints.h"
#include "core/series/retention.h"

namespace headroom {

/// What `prune` does.
struct PruneOptions {
  std::filesystem::path dir;  ///< absolute
  RetentionPolicy policy;
  std::chrono::milliseconds settle{200};  ///< growth-detection interval
  bool remove = false;                    ///< false: plan only (dry run)
  bool in_use = true;                     ///< consult the in-use index
  std::vector<int> ignore_unreadable;     ///< pids vouched for (docs/safety.md)
  /// Only this series (a series_template) or glob; see CheckpointScanOptions.
  std::string series;
  std::string glob;
};

/// The plan and, when removing, what happened.
struct PruneResult {
  CheckpointScan scan;
  RetentionPlan plan;
  RetentionPolicy policy;
  bool removed = false;  ///< removals were attempted
  std::vector<RemovalOutcome> outcomes;
  std::int64_t now_ns = 0;

  [[nodiscard]] std::uint64_t freed_bytes() const;
  /// Planned removals that were skipped or failed.
  [[nodiscard]] std::size_t not_removed() const;
};

/// Scans, plans and, with options.remove, removes.
[[nodiscard]] Result<PruneResult> run_prune(const Context& context, const PruneOptions& options);

}  // namespace headroom
