#pragma once
// The alert rules of `watch` and the engine that turns a stream of samples and
// predictions into firing / repeat / resolved events.
//
// Hysteresis, so alerts do not flap on bursty writes: a rule fires when its
// condition holds, and resolves only after the condition has been clear, with
// a margin (usage below threshold - margin, ETA above horizon x factor), for
// `clear_samples` consecutive samples. A firing alert repeats every
// `repeat_interval` while it holds.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/finding.h"
#include "core/predict/history.h"
#include "core/sample/sample.h"

namespace headroom {

/// Whose OOM kills the oom_kill rule follows.
enum class OomScope {
  /// The examined process's memory cgroup (memory.events counts kills of its
  /// processes by any OOM killer); every kill on the host when it has none.
  /// `run` and the Python monitor: the job's own cgroup.
  kCgroup,
  /// Every OOM kill on the host (/proc/vmstat oom_kill): a node-level watcher.
  kSystem,
  /// The cgroup when it is a job's or container's (it has a memory limit and is not
  /// a systemd service's, such as headroom-watch.service's own), else the host.
  kAuto,
};
/// "cgroup", "system", "auto".
[[nodiscard]] std::string_view to_string(OomScope scope);
/// Parses "cgroup", "system", "auto"; an Error naming the choices otherwise.
[[nodiscard]] Result<OomScope> parse_oom_scope(std::string_view text);

/// Thresholds and timing of every rule; defaults as documented in docs/watch.md.
struct AlertConfig {
  double warn_percent = 85.0;
  double critical_percent = 95.0;
  /// Percentage points below a threshold before a usage alert resolves.
  double usage_clear_margin = 2.0;
  /// Time-to-full below this fires (filesystems and memory).
  std::chrono::seconds eta_horizon{3600};
  /// An ETA alert resolves once the ETA is above horizon x this (or no longer filling).
  double eta_clear_factor = 1.5;
  /// An ETA alert fires only once its trend covers at least this long: a few
  /// seconds of samples are noise, and one write after a flat stretch is a step,
  /// not a rate. Unset: a quarter of the watch window (Watcher fills it in;
  /// 0 for an AlertEngine used alone). `run` sets a minute.
  std::optional<std::chrono::seconds> eta_min_span;
  /// memory_fill_eta fires only while the memory left to the job (MemAvailable,
  /// or the cgroup's room when smaller) is below this percentage of its total
  /// (host memory or the cgroup limit): a steady allocation with plenty left is
  /// a job starting up, not running out. Unset: any level.
  std::optional<double> memory_eta_below_percent = 50.0;
  /// PSI memory "full" avg10 (percent) above this ...
  double psi_full_threshold = 10.0;
  /// ... for at least this long fires.
  std::chrono::seconds psi_for{30};
  /// memory_cgroup: a limited memory cgroup whose working set reaches warn_percent of
  /// its limit, is predicted to reach the limit within this horizon from the last
  /// `cgroup_trend_samples` samples, or whose own PSI "full" avg10 is above
  /// psi_full_threshold in `cgroup_psi_samples` samples in a row. A cgroup OOM can come
  /// seconds after a climb starts: this rule needs a few samples, not a window's trend.
  std::chrono::seconds cgroup_eta_horizon{120};
  std::size_t cgroup_trend_samples = 3;
  int cgroup_psi_samples = 2;
  /// An OOM-kill alert resolves after this long without a new kill.
  std::chrono::seconds oom_quiet{300};
  OomScope oom_scope = OomScope::kCgroup;
  /// Size of one checkpoint (--ckpt-size); enables the checkpoint rule.
  std::optional<std::uint64_t> checkpoint_bytes;
  /// Checkpoints kept (--keep): warn when fewer than this many more fit.
  std::uint64_t keep = 1;
  /// Consecutive clear samples before an alert resolves.
  int clear_samples = 3;
  /// A firing alert is sent again this often while it holds; 0: never.
  std::chrono::seconds repeat_interval{3600};
};

/// Checks the config (thresholds ordered and in range, durations sensible); the Error names the
/// key.
[[nodiscard]] Result<void> validate(const AlertConfig& config);

/// A rule and one severity it raises.
struct RuleSeverity {
  std::string_view rule;
  Severity severity;
};
/// Every rule with each severity it can raise: what headroom_alerts_firing
/// exports (as 0 when none fires), so a series never vanishes.
[[nodiscard]] std::span<const RuleSeverity> alert_rules();

/// What happened to an alert at this sample.
enum class AlertKind { kFiring, kRepeat, kResolved };
/// "firing", "repeat", "resolved".
[[nodiscard]] std::string_view to_string(AlertKind kind);

/// One event sent to the sinks.
struct AlertEvent {
  AlertKind kind = AlertKind::kFiring;
  /// Stable rule id: one of alert_rules() ("filesystem_usage", "oom_kill", ...).
  std::string rule;
  std::string subject;  ///< watched path, mountpoint, "memory", or the cgroup
  Severity severity = Severity::kWarn;
  std::string summary;   ///< one line for people, e.g. "/ckpt full in 12m (91.0% used)"
  double value = 0;      ///< the measured value that tripped (percent, seconds, count)
  double threshold = 0;  ///< what it was compared to
  std::chrono::system_clock::time_point time;     ///< of the sample that produced it
  std::chrono::system_clock::time_point started;  ///< when the alert first fired
  std::map<std::string, std::string> labels;      ///< mountpoint, fstype, role, ...
  /// The machine, stamped by the watch daemon on what it sends off the host; empty elsewhere.
  std::string host;
  /// What the on-call does first, a command line: "headroom du /data; headroom prune ...".
  std::string action;
  /// Stable across events and restarts: alert_fingerprint(host, rule, subject, severity).
  /// Set with the host by the daemon; empty elsewhere.
  std::string id;

  /// "rule/subject/severity": identifies the alert across events.
  [[nodiscard]] std::string key() const;
};

/// Whether an alert means "save a checkpoint now and stop" to a training loop: the next
/// checkpoint will not fit in a watched dir (checkpoint_space critical), or, when no
/// checkpoint size is configured, a watched dir's filesystem is critically full or
/// fills within the horizon. Everything else (/dev/shm, the temp dir, memory, fds, OOM
/// kills) is a warning to act on while the job goes on: a full /dev/shm is not helped
/// by stopping, and a job often finishes at 95% of it.
[[nodiscard]] bool blocks_next_checkpoint(const AlertEvent& event, const AlertConfig& config);

/// One rule's verdict for one subject at one sample (before hysteresis).
struct AlertCondition {
  std::string rule;
  std::string subject;
  Severity severity = Severity::kWarn;
  bool holds = false;     ///< the alert should be firing
  bool clear = true;      ///< clear with margin: counts towards resolving
  bool renotify = false;  ///< send a repeat now (e.g. another OOM kill) even before the interval
  double value = 0;
  double threshold = 0;
  std::string summary;
  std::map<std::string, std::string> labels;
  /// When set, fills `summary` and `labels` (from the sample, which outlives the call).
  /// It is called only for a condition that holds or whose alert is firing: most
  /// conditions, most of the time, are neither, and a watch evaluates them every second.
  std::function<void(AlertCondition&)> describe;

  [[nodiscard]] std::string key() const;
};

/// What to do first about a condition, as commands to run (docs/watch.md#runbook).
[[nodiscard]] std::string runbook_action(const AlertCondition& condition);

/// 16 hex digits, the same for the same host, rule, subject and severity (FNV-1a 64).
[[nodiscard]] std::string alert_fingerprint(std::string_view host, std::string_view rule,
                                            std::string_view subject, Severity severity);

/// An alert that is currently firing.
struct ActiveAlert {
  AlertEvent last;  ///< the newest firing or repeat event
  std::chrono::system_clock::time_point last_sent;
  int clear_count = 0;  ///< consecutive samples with the condition clear
};

/// Feeds on samples and predictions; remembers which alerts fire. Not thread-safe.
class AlertEngine {
 public:
  explicit AlertEngine(AlertConfig config = {});

  /// Evaluates every rule against one sample and its predictions; returns the
  /// events to send (new firing, repeats due, resolved), in a stable order.
  [[nodiscard]] std::vector<AlertEvent> evaluate(const Sample& sample,
                                                 const Predictions& predictions);
  /// Alerts firing now, by key.
  [[nodiscard]] const std::map<std::string, ActiveAlert>& active() const { return active_; }
  [[nodiscard]] const AlertConfig& config() const { return config_; }
  /// Takes alerts that fired before a restart (the daemon's state file) as firing now,
  /// unless already known: judged at the next samples, they go on or resolve.
  void restore(const std::map<std::string, ActiveAlert>& alerts) {
    for (const auto& [key, alert] : alerts) active_.emplace(key, alert);
  }
  /// Swaps in a new config (SIGHUP reload); firing alerts are kept and re-judged
  /// at the next sample.
  void reconfigure(AlertConfig config) {
    config_ = config;
    first_filesystem_.clear();
  }

 private:
  /// Every rule's verdicts for this sample; updates the PSI and OOM trackers.
  std::vector<AlertCondition> conditions(const Sample& sample, const Predictions& predictions);
  /// memory_cgroup's verdict; updates its trend points and PSI count.
  void cgroup_condition(const Sample& sample, std::vector<AlertCondition>& out);
  void judge(const AlertCondition& condition, const Sample& sample,
             std::vector<AlertEvent>& events);
  /// filesystem_stuck, filesystem_changed and mount_missing for every watched path.
  void filesystem_identity_conditions(const Sample& sample, std::vector<AlertCondition>& out);

  AlertConfig config_;
  std::map<std::string, ActiveAlert> active_;
  std::optional<std::uint64_t> last_cgroup_ooms_;
  std::optional<std::uint64_t> last_system_ooms_;
  std::optional<std::chrono::steady_clock::time_point> psi_above_since_;
  std::optional<std::chrono::steady_clock::time_point> last_oom_seen_;
  /// The filesystem each watched path was first seen on: "<device> <mountpoint>", and
  /// how an alert names it. A reconfigure (reload) forgets them.
  std::map<std::string, std::pair<std::string, std::string>> first_filesystem_;
  /// The summary and labels (victim) of the newest OOM kill, for its repeats.
  std::pair<std::string, std::map<std::string, std::string>> last_oom_text_;
  /// memory_cgroup: the newest room-under-the-limit points of the job's cgroup.
  std::string cgroup_path_;
  std::vector<SeriesPoint> cgroup_points_;
  int cgroup_psi_above_ = 0;
};

}  // namespace headroom
