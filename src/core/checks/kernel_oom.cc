// kernel.oom: OOM kills in the kernel log in the last 24 hours, host-wide or in
// a memory cgroup, with the killed command and pid. Past kills are a warning,
// never critical: they say the job's memory budget was wrong before, not that
// it is wrong now. Source: kernel/kmsg.h (/dev/kmsg, mm/oom_kill.c messages).
// Under `run` (options.oom_job_uid) only the job's own history counts: another
// tenant's kill in another cgroup hours ago is not news for this job (issue 16).

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <ctime>

#include "core/checks/check.h"
#include "core/kernel/cgroup.h"
#include "core/kernel/kmsg.h"
#include "core/units.h"

namespace headroom {

namespace {

constexpr std::string_view kWhy =
    "An OOM kill ends a rank or a DataLoader worker with SIGKILL: PyTorch reports only "
    "\"killed by signal: Killed\" or exit code 137. Kills in the last day mean a job here "
    "ran out of memory before and likely will again with the same shape.";

constexpr auto kWindow = std::chrono::hours(24);
// Enough to name the recent ones; the count covers the rest.
constexpr std::size_t kListed = 10;

std::string utc(std::chrono::system_clock::time_point time) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(time);
  return fmt::format("{:%Y-%m-%d %H:%M:%S}Z", fmt::gmtime(seconds));
}

std::string describe(const OomEvent& event, std::chrono::system_clock::time_point now) {
  std::string text = fmt::format("{} (pid {})", event.comm.empty() ? "?" : event.comm, event.pid);
  if (event.constraint == OomConstraint::kMemoryCgroup) {
    text +=
        " in memory cgroup " + (event.oom_cgroup.empty() ? event.task_cgroup : event.oom_cgroup);
  } else if (event.constraint == OomConstraint::kHost) {
    text += ", host out of memory";
  } else {
    text += fmt::format(", constraint {}", to_string(event.constraint));
  }
  if (event.rss_bytes() > 0) text += ", rss " + format_bytes(event.rss_bytes());
  if (event.time) {
    const auto age = std::chrono::duration_cast<std::chrono::seconds>(now - *event.time);
    text += fmt::format(", {} ago", format_duration(std::max(age, std::chrono::seconds(0))));
  }
  return text;
}

// `path` is `base` or below it ("/" holds everything).
bool within(std::string_view path, std::string_view base) {
  if (base == "/" || path == base) return true;
  return path.size() > base.size() && path.starts_with(base) && path[base.size()] == '/';
}

/// Whose kills a job's preflight reports: its user's, in the memory cgroup it
/// starts in (or below), or under a limit that bounds that cgroup too (a
/// container's, a Slurm job's). Without a memory cgroup, the user's anywhere.
struct JobScope {
  std::int64_t uid = 0;
  std::optional<std::string> cgroup;

  [[nodiscard]] bool covers(const OomEvent& event) const {
    if (event.uid && *event.uid != uid) return false;
    if (!cgroup) return true;
    return within(event.task_cgroup, *cgroup) ||
           (!event.oom_cgroup.empty() && within(*cgroup, event.oom_cgroup));
  }
  [[nodiscard]] std::string describe() const {
    return cgroup ? fmt::format("uid {} in memory cgroup {}", uid, *cgroup)
                  : fmt::format("uid {} (no memory cgroup)", uid);
  }
};

std::optional<JobScope> job_scope(const CheckInput& input) {
  if (!input.options.oom_job_uid) return std::nullopt;
  JobScope scope{*input.options.oom_job_uid, std::nullopt};
  if (auto location = find_cgroup(input.context, input.context.pid, "memory"))
    scope.cgroup = location->path;
  return scope;
}

}  // namespace

std::vector<Finding> check_kernel_oom(const CheckInput& input) {
  const Context& context = input.context;
  Finding finding;
  finding.id = "kernel.oom";
  finding.subject = "kernel log";
  finding.why = std::string(kWhy);

  auto log = read_kmsg(context);
  if (!log) return {unknown_finding(finding.id, finding.subject, log.error().message)};
  const auto now = context.syscalls->now();
  const std::vector<OomEvent> all = parse_oom_events(log->records, log->boot_time);

  const std::optional<JobScope> scope = job_scope(input);
  std::vector<const OomEvent*> recent;
  std::uint64_t elsewhere = 0;  // recent kills outside the job's scope
  for (const OomEvent& event : all) {
    // Without a boot time every kill in the buffer counts: it is since boot.
    if (event.time && now - *event.time > kWindow) continue;
    if (scope && !scope->covers(event)) {
      ++elsewhere;
      continue;
    }
    recent.push_back(&event);
  }
  finding.add("records_read", static_cast<std::uint64_t>(log->records.size()), "count");
  finding.add("oom_kills_since_boot", static_cast<std::uint64_t>(all.size()), "count");
  finding.add("oom_kills_24h", static_cast<std::uint64_t>(recent.size()), "count");
  if (scope) {
    finding.add("scope", scope->describe());
    finding.add("oom_kills_24h_elsewhere", elsewhere, "count");
  }
  if (!log->records.empty() && log->boot_time) {
    const auto oldest =
        *log->boot_time + std::chrono::duration_cast<std::chrono::system_clock::duration>(
                              log->records.front().since_boot);
    finding.add("log_starts_at", utc(oldest));
  }

  if (recent.empty()) {
    if (scope) {
      finding.summary = fmt::format(
          "no OOM kills of {} in the last 24 hours ({} elsewhere on the host: headroom check "
          "--only kernel.oom)",
          scope->describe(), elsewhere);
    } else {
      finding.summary =
          all.empty() ? "no OOM kills in the kernel log"
                      : fmt::format("no OOM kills in the last 24 hours ({} earlier)", all.size());
    }
    return {finding};
  }
  const OomEvent& last = *recent.back();
  finding.add("last_kill_pid", static_cast<std::int64_t>(last.pid));
  finding.add("last_kill_comm", last.comm);
  finding.add("last_kill_constraint", std::string(to_string(last.constraint)));
  if (!last.oom_cgroup.empty()) finding.add("last_kill_cgroup", last.oom_cgroup);
  if (last.rss_bytes() > 0) finding.add("last_kill_rss_bytes", last.rss_bytes(), "bytes");
  if (last.time) finding.add("last_kill_time", utc(*last.time));
  std::string listed;
  for (std::size_t index = recent.size() > kListed ? recent.size() - kListed : 0;
       index < recent.size(); ++index) {
    listed += (listed.empty() ? "" : "; ") + describe(*recent[index], now);
  }
  finding.add("kills", listed);

  finding.severity = Severity::kWarn;
  finding.summary =
      fmt::format("{} OOM kill(s) {}in the last 24 hours, the last: {}", recent.size(),
                  scope ? "of " + scope->describe() + " " : "", describe(last, now));
  finding.remedy.emplace_back("read them: dmesg -T | grep -iE 'killed process|oom-kill'");
  finding.remedy.emplace_back(
      "check the job's memory budget before the next run: headroom check --only memory "
      "--worker-rss SIZE --workers N --ranks R");
  return {finding};
}

}  // namespace headroom
