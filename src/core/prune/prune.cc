#include "core/prune/prune.h"

namespace headroom {

std::uint64_t PruneResult::freed_bytes() const {
  std::uint64_t freed = 0;
  for (const RemovalOutcome& outcome : outcomes) freed += outcome.freed_bytes;
  return freed;
}

std::size_t PruneResult::not_removed() const {
  std::size_t count = 0;
  for (const RemovalOutcome& outcome : outcomes) count += outcome.status != RemovalStatus::kRemoved;
  return count;
}

Result<PruneResult> run_prune(const Context& context, const PruneOptions& options) {
  CheckpointScanOptions scan_options{options.dir,    options.settle, options.in_use,
                                     options.series, options.glob,   true};
  auto scan = scan_checkpoints(context, scan_options);
  if (!scan) return fail(scan.error());
  auto plan = plan_retention(scan->checkpoints, options.policy);
  if (!plan) return fail(plan.error());
  PruneResult result{std::move(*scan), std::move(*plan), options.policy, false, {}, 0};
  if (options.remove) {
    std::vector<std::size_t> doomed;
    for (const PlannedCheckpoint& item : result.plan.items) {
      if (item.decision == Decision::kDelete) doomed.push_back(item.index);
    }
    auto outcomes = remove_checkpoints(context, result.scan, doomed,
                                       options.in_use ? HolderRecheck::kScan : HolderRecheck::kSkip,
                                       options.ignore_unreadable);
    if (!outcomes) return fail(outcomes.error());
    result.outcomes = std::move(*outcomes);
    result.removed = true;
  }
  result.now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                      context.syscalls->now().time_since_epoch())
                      .count();
  return result;
}

}  // namespace headroom
