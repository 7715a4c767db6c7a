// The rules themselves: each turns a sample (and its predictions) into
// AlertConditions; AlertEngine::judge applies hysteresis and repeats.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/alerts/rules.h"
#include "core/inuse/inuse_index.h"
#include "core/units.h"

namespace headroom {

namespace {

std::string eta_text(double seconds) {
  return format_duration(std::chrono::seconds(static_cast<std::int64_t>(std::llround(seconds))));
}

std::map<std::string, std::string> filesystem_labels(const FilesystemSample& filesystem) {
  return {{"path", filesystem.path},
          {"mountpoint", filesystem.mountpoint},
          {"fstype", filesystem.fstype},
          {"device", filesystem.source},
          {"role", std::string(to_string(filesystem.role))}};
}

/// The filesystem as a person reads it: its mount point, and the watched path on it when
/// that is not the mount point ("/mnt (holding /mnt/ckpt)"), so an alert about "/" still
/// says which of the user's dirs it concerns.
std::string filesystem_name(const FilesystemSample& filesystem) {
  if (filesystem.path == filesystem.mountpoint) return filesystem.mountpoint;
  return fmt::format("{} (holding {})", filesystem.mountpoint, filesystem.path);
}

/// Whether the oom_kill rule counts the sample's cgroup (else the host's kills).
bool follows_cgroup(OomScope scope, const Sample& sample) {
  if (!sample.cgroup) return false;
  switch (scope) {
    case OomScope::kCgroup:
      return true;
    case OomScope::kSystem:
      return !sample.system_oom_kills;  // the cgroup is better than nothing
    case OomScope::kAuto:
      break;
  }
  const bool service = sample.cgroup->path.ends_with(".service");
  return (sample.cgroup->limit_bytes.has_value() && !service) || !sample.system_oom_kills;
}

/// One filesystem per device: a dir and /tmp on the same disk alert once.
std::vector<const FilesystemSample*> distinct_filesystems(const Sample& sample) {
  std::vector<const FilesystemSample*> result;
  std::set<std::string> seen;
  for (const FilesystemSample& filesystem : sample.filesystems) {
    if (!filesystem.ok) continue;
    if (seen.insert(filesystem.device + "|" + filesystem.mountpoint).second) {
      result.push_back(&filesystem);
    }
  }
  return result;
}

void usage_conditions(const AlertConfig& config, const FilesystemSample& filesystem,
                      std::vector<AlertCondition>& out) {
  const double used = filesystem.used_percent();
  for (const auto& [severity, threshold] :
       {std::pair{Severity::kWarn, config.warn_percent},
        std::pair{Severity::kCritical, config.critical_percent}}) {
    out.push_back({"filesystem_usage",
                   filesystem.mountpoint,
                   severity,
                   used >= threshold,
                   used < threshold - config.usage_clear_margin,
                   false,
                   used,
                   threshold,
                   {},
                   {},
                   [&filesystem, used](AlertCondition& condition) {
                     condition.summary =
                         fmt::format("{} is {} full ({} free of {})", filesystem_name(filesystem),
                                     format_percent(used), format_bytes(filesystem.avail_bytes),
                                     format_bytes(filesystem.total_bytes));
                     condition.labels = filesystem_labels(filesystem);
                   }});
  }
}

/// The time-to-full rule of a filesystem (`filesystem` set) or of memory.
void eta_condition(const AlertConfig& config, std::string rule, std::string subject,
                   const FillEstimate* estimate, std::string what,
                   const FilesystemSample* filesystem, Severity severity,
                   std::vector<AlertCondition>& out) {
  const double horizon = static_cast<double>(config.eta_horizon.count());
  // A trend seen for less than eta_min_span is not stable enough to warn about.
  const bool known =
      estimate != nullptr && estimate->eta_seconds.has_value() &&
      estimate->span_seconds >=
          static_cast<double>(config.eta_min_span.value_or(std::chrono::seconds(0)).count());
  const double eta = known ? *estimate->eta_seconds : INFINITY;
  out.push_back({std::move(rule),
                 std::move(subject),
                 severity,
                 eta<horizon, eta> horizon * config.eta_clear_factor,
                 false,
                 known ? eta : -1,
                 horizon,
                 {},
                 {},
                 [known, eta, what = std::move(what), filesystem](AlertCondition& condition) {
                   condition.summary =
                       known ? fmt::format("{} full in {} at the current rate", what, eta_text(eta))
                             : fmt::format("{} is not filling up", what);
                   if (filesystem != nullptr) condition.labels = filesystem_labels(*filesystem);
                 }});
}

void checkpoint_conditions(const AlertConfig& config, const FilesystemSample& filesystem,
                           std::vector<AlertCondition>& out) {
  if (!config.checkpoint_bytes || filesystem.role != FsRole::kDir) return;
  // The capacity rule of check and save_checkpoint (series/capacity.h): what
  // retention frees before the next save counts as room.
  CapacityInput input{filesystem.avail_bytes, *config.checkpoint_bytes,
                      static_cast<std::size_t>(config.keep),
                      filesystem.series.value_or(SeriesOnDisk{})};
  const Capacity capacity = plan_capacity(input);
  // Clearing needs 5% of a checkpoint more than firing, so a checkpoint just written does not
  // flap.
  CapacityInput tighter = input;
  const std::uint64_t slack = *config.checkpoint_bytes / 20;
  tighter.avail_bytes = input.avail_bytes > slack ? input.avail_bytes - slack : 0;
  const Severity margin = plan_capacity(tighter).severity();
  const Severity now = capacity.severity();
  const double fit = std::floor(static_cast<double>(capacity.room_bytes) /
                                static_cast<double>(*config.checkpoint_bytes));
  const std::string summary = capacity_summary(filesystem.path, input, capacity);
  out.push_back({"checkpoint_space",
                 filesystem.path,
                 Severity::kCritical,
                 now == Severity::kCritical,
                 margin != Severity::kCritical,
                 false,
                 fit,
                 1,
                 summary,
                 filesystem_labels(filesystem),
                 {}});
  out.push_back({"checkpoint_space",
                 filesystem.path,
                 Severity::kWarn,
                 rank(now) >= rank(Severity::kWarn),
                 rank(margin) < rank(Severity::kWarn),
                 false,
                 fit,
                 1,
                 summary,
                 filesystem_labels(filesystem),
                 {}});
}

/// "OOM kill: python3 (pid 4242) in /job.slice, rss 650.0 MiB; 2 new, 8 since boot": the
/// victim first (from the kernel log), the counts after.
std::string oom_summary(const std::vector<OomVictim>& victims, std::uint64_t fresh,
                        std::uint64_t total, const std::string& subject) {
  const std::string where = subject == "system" ? "on this host" : "in " + subject;
  const std::string counts = fmt::format("{} new {}, {} {}", fresh, where, total,
                                         subject == "system" ? "since boot" : "in total");
  if (victims.empty()) {  // the kernel log is not readable (dmesg_restrict) or has no record
    return fmt::format("{} new OOM kill(s) {} ({} {})", fresh, where, total,
                       subject == "system" ? "since boot" : "in total");
  }
  const OomVictim& victim = victims.back();
  return fmt::format("OOM kill: {} (pid {}){}{}, rss {}; {}", victim.comm, victim.pid,
                     victim.cgroup.empty() ? "" : " in memory cgroup ", victim.cgroup,
                     format_bytes(victim.rss_bytes), counts);
}

std::map<std::string, std::string> oom_labels(const std::vector<OomVictim>& victims) {
  if (victims.empty()) return {};
  const OomVictim& victim = victims.back();
  return {{"pid", std::to_string(victim.pid)}, {"comm", victim.comm}, {"cgroup", victim.cgroup}};
}

/// "/data (ext4 /dev/sdb1)": a filesystem as the on-call tells two apart.
std::string filesystem_identity(const FilesystemSample& filesystem) {
  return fmt::format("{} ({}{}{})", filesystem.mountpoint, filesystem.fstype,
                     filesystem.source.empty() ? "" : " ", filesystem.source);
}

}  // namespace

void AlertEngine::filesystem_identity_conditions(const Sample& sample,
                                                 std::vector<AlertCondition>& out) {
  for (const FilesystemSample& filesystem : sample.filesystems) {
    // A hung mount: the kernel does not answer statfs. Every process touching it
    // hangs too (a job writing a checkpoint there sleeps in D state).
    out.push_back({"filesystem_stuck",
                   filesystem.mountpoint,
                   Severity::kCritical,
                   filesystem.stuck,
                   !filesystem.stuck,
                   false,
                   filesystem.stuck ? 1.0 : 0.0,
                   0,
                   {},
                   {},
                   [&filesystem](AlertCondition& condition) {
                     condition.summary =
                         filesystem.stuck ? filesystem.why()
                                          : fmt::format("{} answers again", filesystem.mountpoint);
                     condition.labels = filesystem_labels(filesystem);
                   }});
    if (!filesystem.ok) continue;
    // The filesystem under a watched path changed: unmounted (writes now go to the
    // disk below), or another one mounted over it. The first one seen is the one
    // meant, until a restart or a reload says otherwise.
    std::string now = filesystem.device + " " + filesystem.mountpoint;
    const auto found = first_filesystem_.find(filesystem.path);
    const bool changed = found != first_filesystem_.end() && found->second.first != now;
    if (found == first_filesystem_.end()) {
      first_filesystem_.emplace(filesystem.path,
                                std::pair{std::move(now), filesystem_identity(filesystem)});
    }
    // What it was first seen as (a copy: the text outlives a reload's clear()).
    std::string first = changed ? found->second.second : std::string();
    out.push_back({"filesystem_changed",
                   filesystem.path,
                   Severity::kWarn,
                   changed,
                   !changed,
                   false,
                   changed ? 1.0 : 0.0,
                   0,
                   {},
                   {},
                   [&filesystem, changed, first = std::move(first)](AlertCondition& condition) {
                     condition.summary =
                         changed ? fmt::format(
                                       "{} is now on {}, not on {} as when watch started: "
                                       "unmounted?",
                                       filesystem.path, filesystem_identity(filesystem), first)
                                 : fmt::format("{} is on {}", filesystem.path,
                                               filesystem_identity(filesystem));
                     condition.labels = filesystem_labels(filesystem);
                   }});
    if (filesystem.expect_mount) {
      const bool missing = !filesystem.is_mount;
      out.push_back({"mount_missing",
                     filesystem.path,
                     Severity::kCritical,
                     missing,
                     !missing,
                     false,
                     missing ? 1.0 : 0.0,
                     0,
                     {},
                     {},
                     [&filesystem, missing](AlertCondition& condition) {
                       condition.summary =
                           missing
                               ? fmt::format("{} is not a mount point: writes go to {}, {} free",
                                             filesystem.path, filesystem_identity(filesystem),
                                             format_bytes(filesystem.avail_bytes))
                               : fmt::format("{} is mounted", filesystem.path);
                       condition.labels = filesystem_labels(filesystem);
                     }});
    }
  }
}

void AlertEngine::cgroup_condition(const Sample& sample, std::vector<AlertCondition>& out) {
  if (!sample.cgroup || !sample.cgroup->limit_bytes || *sample.cgroup->limit_bytes == 0) {
    cgroup_points_.clear();
    cgroup_psi_above_ = 0;
    return;
  }
  const CgroupSample& cgroup = *sample.cgroup;
  if (cgroup.path != cgroup_path_) {  // another cgroup: its own trend
    cgroup_path_ = cgroup.path;
    cgroup_points_.clear();
    cgroup_psi_above_ = 0;
  }
  const double limit = static_cast<double>(*cgroup.limit_bytes);
  const double used = static_cast<double>(cgroup.working_set_bytes());
  const double room = std::max(0.0, limit - used);
  const double percent = 100.0 * used / limit;
  const double seconds = std::chrono::duration<double>(sample.monotonic.time_since_epoch()).count();
  cgroup_points_.push_back({seconds, room});
  while (cgroup_points_.size() > config_.cgroup_trend_samples) {
    cgroup_points_.erase(cgroup_points_.begin());
  }
  // The last few samples alone: a climb to the limit in seconds is over before a
  // window-long trend exists (memory_fill_eta needs eta_min_span of it).
  FillOptions fast;
  fast.min_samples = config_.cgroup_trend_samples;
  const FillEstimate trend = fill_eta(cgroup_points_, fast);
  const double horizon = static_cast<double>(config_.cgroup_eta_horizon.count());
  const bool low =
      !config_.memory_eta_below_percent || 100.0 * room / limit < *config_.memory_eta_below_percent;
  const bool filling = trend.eta_seconds && *trend.eta_seconds < horizon && low;
  const bool filling_clear = !trend.eta_seconds || *trend.eta_seconds > horizon * 1.5 || !low;
  const double psi = cgroup.pressure ? cgroup.pressure->full_avg10 : 0.0;
  cgroup_psi_above_ = psi > config_.psi_full_threshold ? cgroup_psi_above_ + 1 : 0;
  const bool stalled = cgroup_psi_above_ >= config_.cgroup_psi_samples;
  const bool full = percent >= config_.warn_percent;

  std::vector<std::string> why;
  if (full) why.push_back(fmt::format("{} of its limit in use", format_percent(percent)));
  if (filling) {
    why.push_back(
        fmt::format("at this rate it reaches the limit in {}", eta_text(*trend.eta_seconds)));
  }
  if (stalled)
    why.push_back(fmt::format("its tasks stalled on memory {:.1f}% of the last 10s", psi));
  const std::string summary =
      why.empty()
          ? fmt::format("memory cgroup {} uses {} of its {} limit", cgroup.path,
                        format_bytes(cgroup.working_set_bytes()), format_bytes(*cgroup.limit_bytes))
          : fmt::format("memory cgroup {} ({} of {}): {}; the OOM killer acts at the limit",
                        cgroup.path, format_bytes(cgroup.working_set_bytes()),
                        format_bytes(*cgroup.limit_bytes), fmt::join(why, "; "));
  out.push_back({"memory_cgroup",
                 cgroup.path.empty() ? "cgroup" : cgroup.path,
                 Severity::kWarn,
                 full || filling || stalled,
                 percent < config_.warn_percent - config_.usage_clear_margin && filling_clear &&
                     psi < config_.psi_full_threshold * 0.8,
                 false,
                 percent,
                 config_.warn_percent,
                 summary,
                 {},
                 {}});
}

std::vector<AlertCondition> AlertEngine::conditions(const Sample& sample,
                                                    const Predictions& predictions) {
  std::vector<AlertCondition> out;
  filesystem_identity_conditions(sample, out);
  for (const FilesystemSample& filesystem : sample.filesystems) {
    if (filesystem.stuck) continue;  // filesystem_stuck says it; the path may be fine
    out.push_back({"path_missing",
                   filesystem.path,
                   Severity::kWarn,
                   !filesystem.ok,
                   filesystem.ok,
                   false,
                   filesystem.ok ? 0.0 : 1.0,
                   0,
                   {},
                   {},
                   [&filesystem](AlertCondition& condition) {
                     condition.summary = filesystem.ok
                                             ? fmt::format("{} is back", filesystem.path)
                                             : fmt::format("{} cannot be watched: {}",
                                                           filesystem.path, filesystem.why());
                     condition.labels = {{"path", filesystem.path},
                                         {"role", std::string(to_string(filesystem.role))}};
                   }});
  }
  for (const FilesystemSample* filesystem : distinct_filesystems(sample)) {
    usage_conditions(config_, *filesystem, out);
    eta_condition(config_, "filesystem_fill_eta", filesystem->mountpoint,
                  predictions.filesystem(filesystem->path), filesystem_name(*filesystem),
                  filesystem, Severity::kCritical, out);
  }
  for (const FilesystemSample& filesystem : sample.filesystems) {
    if (filesystem.ok) checkpoint_conditions(config_, filesystem, out);
  }
  if (sample.memory) {
    const FillEstimate* memory = predictions.memory ? &*predictions.memory : nullptr;
    // The same memory History predicts: the host's, or the cgroup's when tighter.
    const auto [left, total] = *sample.memory_left();
    if (config_.memory_eta_below_percent && total > 0 &&
        100.0 * left / total >= *config_.memory_eta_below_percent) {
      memory = nullptr;  // plenty available: no time-to-full warning yet
    }
    eta_condition(config_, "memory_fill_eta", "memory", memory, "memory", nullptr, Severity::kWarn,
                  out);
  }
  if (sample.pressure) {
    const double full = sample.pressure->full_avg10;
    const double threshold = config_.psi_full_threshold;
    if (full > threshold) {
      if (!psi_above_since_) psi_above_since_ = sample.monotonic;
    } else {
      psi_above_since_.reset();
    }
    const bool holds = psi_above_since_ && sample.monotonic - *psi_above_since_ >= config_.psi_for;
    out.push_back({"memory_psi",
                   "memory",
                   Severity::kCritical,
                   holds,
                   full < threshold * 0.8,
                   false,
                   full,
                   threshold,
                   fmt::format("memory pressure: all tasks stalled {:.1f}% of the last 10s", full),
                   {},
                   {}});
  }
  cgroup_condition(sample, out);
  // New OOM kills, in the cgroup or on the whole host (oom_scope).
  std::optional<std::uint64_t> ooms;
  std::optional<std::uint64_t>* last = nullptr;
  std::string subject;
  if (follows_cgroup(config_.oom_scope, sample)) {
    ooms = sample.cgroup->oom_kills;
    last = &last_cgroup_ooms_;
    subject = sample.cgroup->path.empty() ? "cgroup" : sample.cgroup->path;
  } else if (sample.system_oom_kills) {
    ooms = sample.system_oom_kills;
    last = &last_system_ooms_;
    subject = "system";
  }
  if (ooms && last != nullptr) {
    const std::uint64_t previous = last->value_or(*ooms);
    const std::uint64_t fresh = *ooms > previous ? *ooms - previous : 0;
    *last = *ooms;
    if (fresh > 0) {
      last_oom_seen_ = sample.monotonic;
      // The kernel log is the host's: a cgroup's alert names only its own victims.
      std::vector<OomVictim> victims;
      for (const OomVictim& victim : sample.oom_victims) {
        if (subject == "system" || path_at_or_under(victim.cgroup, subject)) {
          victims.push_back(victim);
        }
      }
      // Kept for the repeats and the resolution, which come with no new kill.
      last_oom_text_ = {oom_summary(victims, fresh, *ooms, subject), oom_labels(victims)};
    }
    const bool holds = last_oom_seen_ && sample.monotonic - *last_oom_seen_ < config_.oom_quiet;
    out.push_back({"oom_kill",
                   subject,
                   Severity::kCritical,
                   holds,
                   !holds,
                   fresh > 0,
                   static_cast<double>(*ooms),
                   0,
                   holds ? last_oom_text_.first
                         : fmt::format("no OOM kill {} for {}",
                                       subject == "system" ? "on this host" : "in " + subject,
                                       format_duration(config_.oom_quiet)),
                   last_oom_text_.second,
                   {}});
  }
  if (sample.fds && sample.fds->limit != 0 && sample.fds->limit != Limit::kUnlimited) {
    const double used =
        100.0 * static_cast<double>(sample.fds->open) / static_cast<double>(sample.fds->limit);
    out.push_back({"fd_usage",
                   "fds",
                   Severity::kWarn,
                   used >= config_.warn_percent,
                   used < config_.warn_percent - config_.usage_clear_margin,
                   false,
                   used,
                   config_.warn_percent,
                   sample.fds->system ? fmt::format("{} of {} file handles allocated system-wide",
                                                    sample.fds->open, sample.fds->limit)
                                      : fmt::format("{} of {} file descriptors open",
                                                    sample.fds->open, sample.fds->limit),
                   {},
                   {}});
  }
  return out;
}

std::vector<AlertEvent> AlertEngine::evaluate(const Sample& sample,
                                              const Predictions& predictions) {
  std::vector<AlertEvent> events;
  std::set<std::string> seen;
  // Nothing firing (the usual sample): no keys to match, no orphans to look for.
  const bool none_active = active_.empty();
  for (AlertCondition& condition : conditions(sample, predictions)) {
    if (none_active && !condition.holds) continue;
    std::string key = condition.key();
    // judge() has nothing to do for a condition that neither holds nor has an alert
    // firing: its texts are not even written.
    if (condition.holds || active_.contains(key)) {
      if (condition.describe) condition.describe(condition);
      judge(condition, sample, events);
    }
    if (!none_active) seen.insert(std::move(key));
  }
  if (none_active) return events;
  // Alerts whose subject is no longer measured (a dir gone, a probe failing)
  // count as clear: path_missing or the probe metrics say what happened.
  // Nor do alerts about a filesystem that hangs: its usage is unknown, not fine.
  std::set<std::string> hung;
  for (const FilesystemSample& filesystem : sample.filesystems) {
    if (filesystem.stuck) hung.insert(filesystem.mountpoint);
  }
  std::vector<AlertCondition> orphans;
  for (const auto& [key, alert] : active_) {
    if (seen.count(key) != 0) continue;
    const auto mountpoint = alert.last.labels.find("mountpoint");
    if (mountpoint != alert.last.labels.end() && hung.count(mountpoint->second) != 0) continue;
    orphans.push_back({alert.last.rule,
                       alert.last.subject,
                       alert.last.severity,
                       false,
                       true,
                       false,
                       alert.last.value,
                       alert.last.threshold,
                       fmt::format("{}: no longer measured", alert.last.subject),
                       {},
                       {}});
  }
  for (const AlertCondition& orphan : orphans) judge(orphan, sample, events);
  return events;
}

}  // namespace headroom
