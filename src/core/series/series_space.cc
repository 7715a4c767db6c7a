#include "core/series/series_space.h"

#include <algorithm>

#include "core/series/checkpoint_name.h"

namespace headroom {

SeriesOnDisk series_on_disk(const CheckpointScan& scan, const RetentionPlan& plan,
                            std::size_t series) {
  SeriesOnDisk out;
  if (series < plan.series.size()) out.name = plan.series[series].name;
  // plan.items lists each series oldest first.
  bool complete_seen = false;
  for (auto item = plan.items.rbegin(); item != plan.items.rend(); ++item) {
    const Checkpoint& checkpoint = scan.checkpoints[item->index];
    // Open for writing now: a live pid (maybe reused) or a reader makes no save in progress.
    const bool writing = checkpoint.being_written;
    if (item->series == series) {
      // Newer than every complete member and still being written: the next save itself.
      if (!item->complete && !complete_seen && writing) {
        out.saving_bytes += checkpoint.tally.disk_bytes;
        continue;
      }
      complete_seen = complete_seen || item->complete;
      out.members.push_back({checkpoint.tally.disk_bytes, item->complete, item->pinned});
    } else if (item->series == kNoSeries && item->decision == Decision::kDelete) {
      out.reclaimable_bytes += checkpoint.tally.disk_bytes;
    } else if (item->series == kNoSeries && writing && !out.name.empty() &&
               series_template(checkpoint.temp.target, false) == out.name) {
      out.saving_bytes += checkpoint.tally.disk_bytes;  // the temp of a save of this series
    }
  }
  return out;
}

std::optional<std::size_t> active_series(const CheckpointScan& scan, const RetentionPlan& plan) {
  std::optional<std::size_t> best;
  std::int64_t newest = 0;
  for (const PlannedCheckpoint& item : plan.items) {
    // A name without a step ("old-run.bin", "resnet50.pt") is a file, not a series a
    // job saves into with retention: saving beside it never removes it.
    if (item.series == kNoSeries || plan.series[item.series].ordered_by != "step number") {
      continue;
    }
    const std::int64_t mtime = scan.checkpoints[item.index].tally.newest_mtime_ns;
    if (!best || mtime > newest) {
      best = item.series;
      newest = mtime;
    }
  }
  return best;
}

Result<SeriesOnDisk> read_active_series(const Context& context, const std::filesystem::path& dir) {
  CheckpointScanOptions options;
  options.dir = dir;
  options.settle = std::chrono::milliseconds(0);
  options.in_use = false;
  auto scan = scan_checkpoints(context, options);
  if (!scan) return fail(scan.error());
  auto plan = plan_retention(scan->checkpoints, RetentionPolicy{});
  if (!plan) return fail(plan.error());
  const auto series = active_series(*scan, *plan);
  if (!series) {
    SeriesOnDisk none;
    for (const PlannedCheckpoint& item : plan->items) {
      if (item.decision == Decision::kDelete) {
        none.reclaimable_bytes += scan->checkpoints[item.index].tally.disk_bytes;
      }
    }
    return none;
  }
  return series_on_disk(*scan, *plan, *series);
}

}  // namespace headroom
