// The human and JSON renderings of `headroom prune`.

#include "core/prune/render.h"

#include <fmt/format.h>

#include "core/prune/prune.h"
#include "core/report/style.h"
#include "core/text_out.h"
#include "core/units.h"

namespace headroom {

namespace {

constexpr std::string_view kRed = "\033[31m";
constexpr std::string_view kGreen = "\033[32m";

std::string display_name(const Checkpoint& checkpoint) {
  return checkpoint.directory ? checkpoint.name + "/" : checkpoint.name;
}

std::size_t count_checkpoints(const PruneResult& result) {
  std::size_t count = 0;
  for (const Checkpoint& checkpoint : result.scan.checkpoints) {
    count += checkpoint.kind == EntryKind::kCheckpoint;
  }
  return count;
}

std::string_view kind_name(const Checkpoint& checkpoint) {
  if (checkpoint.kind == EntryKind::kSaveTemp) return "save_temp";
  return checkpoint.directory ? "directory" : "file";
}

std::string_view writer_name(WriterState state) {
  switch (state) {
    case WriterState::kAlive:
      return "alive";
    case WriterState::kGone:
      return "gone";
    case WriterState::kUnknown:
      return "unknown";
  }
  return "unknown";
}

std::string number_text(const CheckpointName& parsed) {
  if (parsed.step) return std::to_string(*parsed.step);
  if (parsed.epoch) return "e" + std::to_string(*parsed.epoch);
  return "-";
}

const RemovalOutcome* outcome_of(const PruneResult& result, std::size_t index) {
  for (const RemovalOutcome& outcome : result.outcomes) {
    if (outcome.index == index) return &outcome;
  }
  return nullptr;
}

std::string_view status_name(RemovalStatus status) {
  switch (status) {
    case RemovalStatus::kRemoved:
      return "removed";
    case RemovalStatus::kSkipped:
      return "skipped";
    case RemovalStatus::kFailed:
      return "failed";
  }
  return "failed";
}

std::string headline(const PruneResult& result, const TextStyle& style) {
  const std::string dir = printable(result.scan.dir.string());
  if (result.scan.checkpoints.empty()) return fmt::format("{}: no checkpoints found\n", dir);
  const std::size_t checkpoints = count_checkpoints(result);
  if (result.plan.deletions == 0) {
    return fmt::format("{}: nothing to prune: all {} checkpoints are kept\n", dir, checkpoints);
  }
  const std::size_t temps = result.scan.checkpoints.size() - checkpoints;
  const std::string of_what =
      temps > 0 ? fmt::format("{} checkpoints and {} save temps", checkpoints, temps)
                : fmt::format("{} checkpoints", checkpoints);
  if (!result.removed) {
    return fmt::format("{}: would delete {} of {}, freeing {} (dry run: add --yes to delete)\n",
                       dir, result.plan.deletions, of_what,
                       paint(style, kRed, format_bytes(result.plan.delete_bytes)));
  }
  std::string line = fmt::format("{}: deleted {} checkpoints, freed {}", dir,
                                 result.outcomes.size() - result.not_removed(),
                                 paint(style, kGreen, format_bytes(result.freed_bytes())));
  if (result.not_removed() > 0)
    line += fmt::format("; {} not removed (see below)", result.not_removed());
  return line + "\n";
}

}  // namespace

std::string render_prune_text(const PruneResult& result, const TextStyle& style) {
  std::string out = headline(result, style);
  if (result.scan.checkpoints.empty()) return out;
  std::optional<std::size_t> shown_series;
  for (const PlannedCheckpoint& item : result.plan.items) {
    const Checkpoint& checkpoint = result.scan.checkpoints[item.index];
    if (item.series != shown_series) {
      // One block per series (the names that share all but the step), then the save temps.
      shown_series = item.series;
      if (item.series == kNoSeries) {
        out += "\nTemp files of headroom.save_checkpoint:\n";
      } else {
        const SeriesPlan& series = result.plan.series[item.series];
        out +=
            fmt::format("\nSeries {} ({} checkpoint{}, ordered by {}):\n", printable(series.name),
                        series.members, series.members == 1 ? "" : "s", series.ordered_by);
      }
      out += fmt::format("{:<8}  {:>10}  {:>8}  {:>9}  {:<28}  {}\n", "ACTION", "SIZE", "STEP",
                         "AGE", "NAME", "WHY");
    }
    std::string action = item.decision == Decision::kKeep ? "keep" : "delete";
    std::string why = fmt::format("{}", fmt::join(item.reasons, "; "));
    if (const RemovalOutcome* outcome = outcome_of(result, item.index)) {
      action = std::string(status_name(outcome->status));
      if (outcome->status != RemovalStatus::kRemoved) why = outcome->reason;
    }
    const std::string padded = fmt::format("{:<8}", action);
    out += fmt::format("{}  {:>10}  {:>8}  {:>9}  {:<28}  {}\n",
                       paint(style, item.decision == Decision::kKeep ? kGreen : kRed, padded),
                       format_bytes(checkpoint.tally.disk_bytes), number_text(checkpoint.parsed),
                       format_age(result.now_ns, checkpoint.tally.newest_mtime_ns),
                       printable(display_name(checkpoint)), printable(why));
  }
  if (result.scan.mounts_skipped > 0) {
    out +=
        fmt::format("\n{} checkpoint-named mount point(s) of other filesystems were left alone.\n",
                    result.scan.mounts_skipped);
  }
  if (!result.scan.in_use_note.empty())
    out += fmt::format("\nIn use: {}\n", result.scan.in_use_note);
  return out;
}

nlohmann::ordered_json prune_to_json(const PruneResult& result) {
  nlohmann::ordered_json items = nlohmann::ordered_json::array();
  for (const PlannedCheckpoint& item : result.plan.items) {
    const Checkpoint& checkpoint = result.scan.checkpoints[item.index];
    nlohmann::ordered_json metrics = nlohmann::ordered_json::object();
    for (const auto& [name, value] : checkpoint.parsed.metrics) metrics[name] = value;
    nlohmann::ordered_json holders = nlohmann::ordered_json::array();
    for (const CheckpointHolder& holder : checkpoint.holders) {
      holders.push_back({{"pid", holder.pid},
                         {"command", holder.command},
                         {"user", holder.user},
                         {"how", holder.how}});
    }
    nlohmann::ordered_json json = {
        {"name", checkpoint.name},
        {"path", (result.scan.dir / checkpoint.name).string()},
        {"type", kind_name(checkpoint)},
        {"series", item.series == kNoSeries
                       ? nlohmann::ordered_json(nullptr)
                       : nlohmann::ordered_json(result.plan.series[item.series].name)},
        {"complete", item.complete},
        {"incomplete_reason", item.incomplete},
        {"step",
         checkpoint.parsed.step ? nlohmann::ordered_json(*checkpoint.parsed.step) : nullptr},
        {"epoch",
         checkpoint.parsed.epoch ? nlohmann::ordered_json(*checkpoint.parsed.epoch) : nullptr},
        {"metrics", metrics},
        {"disk_bytes", checkpoint.tally.disk_bytes},
        {"apparent_bytes", checkpoint.tally.apparent_bytes},
        {"newest_mtime", checkpoint.tally.newest_mtime_ns / 1'000'000'000},
        {"growing", checkpoint.growing},
        {"holders", holders},
        {"decision", item.decision == Decision::kKeep ? "keep" : "delete"},
        {"reasons", item.reasons},
    };
    if (checkpoint.kind == EntryKind::kSaveTemp) {
      json["target"] = checkpoint.temp.target;
      json["writer_pid"] = checkpoint.temp.pid;
      json["writer"] = writer_name(checkpoint.writer);
    }
    if (const RemovalOutcome* outcome = outcome_of(result, item.index)) {
      json["outcome"] = status_name(outcome->status);
      json["outcome_reason"] = outcome->reason;
    }
    items.push_back(std::move(json));
  }
  nlohmann::ordered_json series = nlohmann::ordered_json::array();
  for (const SeriesPlan& plan : result.plan.series) {
    series.push_back(
        {{"name", plan.name},
         {"ordered_by", plan.ordered_by},
         {"members", plan.members},
         {"newest_complete",
          plan.newest_complete
              ? nlohmann::ordered_json(result.scan.checkpoints[*plan.newest_complete].name)
              : nlohmann::ordered_json(nullptr)}});
  }
  const RetentionPolicy& policy = result.policy;
  return {
      {"dir", result.scan.dir.string()},
      {"dry_run", !result.removed},
      {"ordered_by", result.plan.ordered_by},
      {"policy",
       {{"keep_last", policy.keep_last},
        {"keep_best", policy.keep_best},
        {"metric", result.plan.metric},
        {"mode", result.plan.mode == MetricMode::kMin   ? "min"
                 : result.plan.mode == MetricMode::kMax ? "max"
                                                        : ""},
        {"keep_every", policy.keep_every}}},
      {"series", series},
      {"checkpoints", items},
      {"delete_count", result.plan.deletions},
      {"delete_bytes", result.plan.delete_bytes},
      {"removed_count", result.outcomes.size() - result.not_removed()},
      {"not_removed_count", result.not_removed()},
      {"freed_bytes", result.freed_bytes()},
      {"in_use_note", result.scan.in_use_note},
  };
}

}  // namespace headroom
