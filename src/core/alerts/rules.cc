#include "core/alerts/rules.h"

#include <fmt/format.h>

#include "core/thresholds.h"
#include "core/units.h"

namespace headroom {

std::string AlertCondition::key() const {
  return rule + "/" + subject + "/" + std::string(to_string(severity));
}

std::string_view to_string(AlertKind kind) {
  switch (kind) {
    case AlertKind::kFiring:
      return "firing";
    case AlertKind::kRepeat:
      return "repeat";
    case AlertKind::kResolved:
      return "resolved";
  }
  return "firing";
}

bool blocks_next_checkpoint(const AlertEvent& event, const AlertConfig& config) {
  if (event.severity != Severity::kCritical || event.kind == AlertKind::kResolved) return false;
  if (event.rule == "checkpoint_space") return true;
  if (config.checkpoint_bytes) return false;  // checkpoint_space is the judge then
  const auto role = event.labels.find("role");
  return (event.rule == "filesystem_usage" || event.rule == "filesystem_fill_eta") &&
         role != event.labels.end() && role->second == "dir";
}

std::string_view to_string(OomScope scope) {
  switch (scope) {
    case OomScope::kCgroup:
      return "cgroup";
    case OomScope::kSystem:
      return "system";
    case OomScope::kAuto:
      return "auto";
  }
  return "auto";
}

Result<OomScope> parse_oom_scope(std::string_view text) {
  for (OomScope scope : {OomScope::kCgroup, OomScope::kSystem, OomScope::kAuto}) {
    if (text == to_string(scope)) return scope;
  }
  return fail(Error::invalid(
      fmt::format("oom_scope \"{}\" is not one of \"auto\", \"cgroup\", \"system\"", text)));
}

std::span<const RuleSeverity> alert_rules() {
  static constexpr RuleSeverity kRules[] = {
      {"filesystem_usage", Severity::kWarn},
      {"filesystem_usage", Severity::kCritical},
      {"filesystem_fill_eta", Severity::kCritical},
      {"filesystem_stuck", Severity::kCritical},
      {"filesystem_changed", Severity::kWarn},
      {"mount_missing", Severity::kCritical},
      {"memory_fill_eta", Severity::kWarn},
      {"memory_psi", Severity::kCritical},
      {"memory_cgroup", Severity::kWarn},
      {"oom_kill", Severity::kCritical},
      {"checkpoint_space", Severity::kWarn},
      {"checkpoint_space", Severity::kCritical},
      {"path_missing", Severity::kWarn},
      {"fd_usage", Severity::kWarn},
  };
  return kRules;
}

std::string alert_fingerprint(std::string_view host, std::string_view rule,
                              std::string_view subject, Severity severity) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (std::string_view part : {host, rule, subject, to_string(severity)}) {
    for (const char letter : part) {
      hash = (hash ^ static_cast<unsigned char>(letter)) * 0x100000001b3ULL;
    }
    hash = (hash ^ 0xffU) * 0x100000001b3ULL;  // a separator: ("ab","c") is not ("a","bc")
  }
  return fmt::format("{:016x}", hash);
}

std::string runbook_action(const AlertCondition& condition) {
  const auto label = [&](const char* name) {
    const auto found = condition.labels.find(name);
    return found == condition.labels.end() ? std::string() : found->second;
  };
  const std::string& rule = condition.rule;
  if (rule == "filesystem_usage" || rule == "filesystem_fill_eta") {
    const std::string role = label("role");
    if (role == "shm") return "free stale segments: headroom clean --shm";
    if (role == "tmp") {
      return fmt::format("see what fills it: headroom du {}; old temp files: headroom clean --tmp",
                         label("path"));
    }
    return fmt::format(
        "see what fills it: headroom du {}; drop old checkpoints: headroom prune DIR --keep-last N",
        label("mountpoint"));
  }
  if (rule == "checkpoint_space") {
    return fmt::format("drop old checkpoints: headroom prune {} --keep-last N", condition.subject);
  }
  if (rule == "filesystem_stuck") {
    return fmt::format(
        "find its server or daemon: findmnt {}; processes hung on it: ps -eo pid,stat,args | "
        "awk '$2 ~ /D/'",
        condition.subject);
  }
  if (rule == "filesystem_changed" || rule == "mount_missing") {
    return fmt::format(
        "check the mount: findmnt -T {}; remount it (mount -a) before jobs write "
        "to the disk below",
        condition.subject);
  }
  if (rule == "path_missing") {
    return fmt::format("check the path: ls -ld {}; findmnt -T {}", condition.subject,
                       condition.subject);
  }
  if (rule == "memory_cgroup") {
    return fmt::format(
        "largest processes: ps -eo pid,rss,args --sort=-rss | head; the limit of {}: headroom "
        "check --only memory.cgroup",
        condition.subject);
  }
  if (rule == "memory_fill_eta" || rule == "memory_psi") {
    return "largest processes: ps -eo pid,rss,args --sort=-rss | head; the job's budget: "
           "headroom check --only memory";
  }
  if (rule == "oom_kill") {
    return "read the kills: dmesg -T | grep -iE 'killed process|oom-kill'; size the job: headroom "
           "check --only memory --worker-rss SIZE --workers N";
  }
  if (rule == "fd_usage") return "who holds them: headroom check --only fd.system";
  return {};
}

std::string AlertEvent::key() const {
  return rule + "/" + subject + "/" + std::string(to_string(severity));
}

Result<void> validate(const AlertConfig& config) {
  const PercentThresholds thresholds{config.warn_percent, config.critical_percent};
  if (auto valid = thresholds.validate(); !valid) return valid;
  if (config.usage_clear_margin < 0 || config.usage_clear_margin >= config.warn_percent) {
    return fail(Error::invalid("usage_clear_margin must be in [0, warn_percent)"));
  }
  if (config.eta_horizon.count() <= 0) return fail(Error::invalid("eta_horizon must be > 0"));
  if (config.eta_clear_factor < 1) return fail(Error::invalid("eta_clear_factor must be >= 1"));
  if (config.eta_min_span && config.eta_min_span->count() < 0)
    return fail(Error::invalid("eta_min_span must not be negative"));
  if (config.memory_eta_below_percent &&
      (*config.memory_eta_below_percent <= 0 || *config.memory_eta_below_percent > 100)) {
    return fail(Error::invalid("memory_eta_below_percent must be in (0, 100]"));
  }
  if (config.psi_full_threshold < 0 || config.psi_full_threshold > 100) {
    return fail(Error::invalid("psi_full_threshold must be in [0, 100]"));
  }
  if (config.psi_for.count() < 0 || config.oom_quiet.count() < 0 ||
      config.repeat_interval.count() < 0) {
    return fail(Error::invalid("durations must not be negative"));
  }
  if (config.checkpoint_bytes && *config.checkpoint_bytes == 0) {
    return fail(Error::invalid("checkpoint size must be > 0"));
  }
  if (config.keep == 0) return fail(Error::invalid("keep must be >= 1"));
  if (config.clear_samples < 1) return fail(Error::invalid("clear_samples must be >= 1"));
  return {};
}

AlertEngine::AlertEngine(AlertConfig config) : config_(config) {}

void AlertEngine::judge(const AlertCondition& condition, const Sample& sample,
                        std::vector<AlertEvent>& events) {
  const std::string key = condition.key();
  auto found = active_.find(key);
  if (condition.holds) {
    AlertEvent event{AlertKind::kFiring,
                     condition.rule,
                     condition.subject,
                     condition.severity,
                     condition.summary,
                     condition.value,
                     condition.threshold,
                     sample.time,
                     sample.time,
                     condition.labels,
                     {},
                     runbook_action(condition),
                     {}};
    if (found == active_.end()) {
      active_.emplace(key, ActiveAlert{event, sample.time, 0});
      events.push_back(std::move(event));
      return;
    }
    ActiveAlert& alert = found->second;
    alert.clear_count = 0;
    event.started = alert.last.started;
    const bool due = config_.repeat_interval.count() > 0 &&
                     sample.time - alert.last_sent >= config_.repeat_interval;
    alert.last = event;
    if (due || condition.renotify) {
      event.kind = AlertKind::kRepeat;
      alert.last_sent = sample.time;
      events.push_back(std::move(event));
    }
    return;
  }
  if (found == active_.end()) return;
  ActiveAlert& alert = found->second;
  if (!condition.clear) {
    alert.clear_count = 0;  // inside the hysteresis band: neither firing anew nor resolving
    return;
  }
  if (++alert.clear_count < config_.clear_samples) return;
  AlertEvent event = alert.last;
  event.kind = AlertKind::kResolved;
  event.time = sample.time;
  event.summary = condition.summary;
  event.value = condition.value;
  active_.erase(found);
  events.push_back(std::move(event));
}

}  // namespace headroom
