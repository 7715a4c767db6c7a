#include "core/alerts/rules.h"

#include <fmt/format.h>

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

std::string AlertEvent::key() const {
  return rule + "/" + subject + "/" + std::string(to_string(severity));
}

Result<void> validate(const AlertConfig& config) {
  if (config.warn_percent <= 0 || config.warn_percent > 100) {
    return fail(Error::invalid("warn_percent must be in (0, 100]"));
  }
  if (config.critical_percent < config.warn_percent || config.critical_percent > 100) {
    return fail(Error::invalid("critical_percent must be in [warn_percent, 100]"));
  }
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
