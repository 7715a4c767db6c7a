#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <vector>

#include "core/alerts/render.h"
#include "core/units.h"

namespace headroom {

namespace {

std::string eta_cell(const FillEstimate* estimate) {
  if (estimate == nullptr || !estimate->rate) return "collecting";
  if (!estimate->eta_seconds) return "not filling";
  return format_duration(std::chrono::seconds(static_cast<std::int64_t>(*estimate->eta_seconds)));
}

/// Local wall-clock time of a sample, "21:45:02".
std::string clock_time(std::chrono::system_clock::time_point time) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(time);
  std::tm local{};
  localtime_r(&seconds, &local);
  return fmt::format("{:02}:{:02}:{:02}", local.tm_hour, local.tm_min, local.tm_sec);
}

}  // namespace

/// The human form of one step: the filesystems first (what fills up), then memory.
std::string render_watch_text(const WatchStep& step) {
  std::string out;
  for (const FilesystemSample& filesystem : step.sample.filesystems) {
    if (!filesystem.ok) {
      out += fmt::format("{:<24} {:<4} not watchable: {}\n", filesystem.path,
                         to_string(filesystem.role), filesystem.why());
      continue;
    }
    out += fmt::format("{:<24} {:<4} {:>10} free of {:>10} ({:>6} used) {:<8} full in: {}\n",
                       filesystem.path, to_string(filesystem.role),
                       format_bytes(filesystem.avail_bytes), format_bytes(filesystem.total_bytes),
                       format_percent(filesystem.used_percent()), filesystem.fstype,
                       eta_cell(step.predictions.filesystem(filesystem.path)));
  }
  const Sample& sample = step.sample;
  if (sample.memory) {
    out += fmt::format("memory: {} available of {}, swap {} free of {}\n",
                       format_bytes(sample.memory->available_bytes),
                       format_bytes(sample.memory->total_bytes),
                       format_bytes(sample.memory->swap_free_bytes),
                       format_bytes(sample.memory->swap_total_bytes));
  }
  if (sample.pressure) {
    out += fmt::format("memory pressure: some {:.2f}%, full {:.2f}% (avg10)\n",
                       sample.pressure->some_avg10, sample.pressure->full_avg10);
  }
  if (sample.cgroup) {
    out += fmt::format("cgroup {}: {} used, limit {}, {} OOM kill(s)\n", sample.cgroup->path,
                       format_bytes(sample.cgroup->usage_bytes),
                       sample.cgroup->limit_bytes ? format_bytes(*sample.cgroup->limit_bytes)
                                                  : std::string("none"),
                       sample.cgroup->oom_kills);
  }
  if (sample.fds) {
    out += sample.fds->system
               ? fmt::format("file handles: {} allocated system-wide of {}\n", sample.fds->open,
                             sample.fds->limit)
               : fmt::format("fds: {} open of {}\n", sample.fds->open, sample.fds->limit);
  }
  if (sample.shm_stale_bytes) {
    const std::uint64_t unknown = sample.shm_unknown_bytes.value_or(0);
    out += fmt::format("stale /dev/shm: {}{}\n", format_bytes(*sample.shm_stale_bytes),
                       unknown == 0 ? std::string()
                                    : fmt::format(" ({} more not provable: other users' "
                                                  "processes could not be inspected)",
                                                  format_bytes(unknown)));
  }
  for (const ProbeStatus& probe : sample.probes) {
    if (!probe.success)
      out += fmt::format("probe {} failed: {}\n", probe.probe,
                         probe.error ? probe.error->message : "");
  }
  return out;
}

std::string LiveView::frame(const WatchStep& step) {
  for (const AlertEvent& event : step.events) {
    if (event.kind == AlertKind::kResolved) {
      firing_.erase(event.key());
    } else {
      firing_[event.key()] = event;
    }
  }
  // Home and clear, then the frame: the view stays put instead of scrolling.
  std::string out = "\x1b[H\x1b[2J";
  out += fmt::format(
      "headroom watch: every {}, predictions over the last {}; sample at {} "
      "(Ctrl-C stops)\n\n",
      format_setting(interval_), format_setting(window_), clock_time(step.sample.time));
  out += render_watch_text(step);
  // A rule that is critical for a subject is also warn for it (two alerts, as
  // in Prometheus, where Alertmanager inhibits the warning): show the worse.
  std::vector<const AlertEvent*> shown;
  for (const auto& entry : firing_) {
    const AlertEvent& event = entry.second;
    const bool worse_firing = event.severity == Severity::kWarn &&
                              std::any_of(firing_.begin(), firing_.end(), [&](const auto& other) {
                                return other.second.rule == event.rule &&
                                       other.second.subject == event.subject &&
                                       other.second.severity == Severity::kCritical;
                              });
    if (!worse_firing) shown.push_back(&event);
  }
  if (shown.empty()) {
    out += "\nno alert firing\n";
    return out;
  }
  out += fmt::format("\n{} alert(s) firing:\n", shown.size());
  for (const AlertEvent* event : shown) {
    // The summary is the firing event's; the rows above have the values now.
    out +=
        fmt::format("  {}{:<8}{} {:<20} {} (since {})\n", severity_color(event->severity, style_),
                    to_string(event->severity), color_reset(style_), event->rule, event->summary,
                    clock_time(event->started));
  }
  return out;
}

}  // namespace headroom
