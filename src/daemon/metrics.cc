#include "daemon/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <initializer_list>
#include <set>
#include <span>

namespace headroom::daemon {

namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;
using LabelView = std::pair<std::string_view, std::string_view>;
/// Label names and values as views of the snapshot's strings, not two strings each; a
/// braced list of them is passed as it is (an initializer_list), with no vector per sample.
using Labels = std::vector<LabelView>;
using LabelSpan = std::span<const LabelView>;

/// Where the metrics of a snapshot go: families of prometheus-cpp (tests compare them with
/// its serializer), or straight to the text a scrape sends.
class MetricOut {
 public:
  virtual ~MetricOut() = default;
  void gauge(std::string_view name, std::string_view help, LabelSpan labels, double value) {
    add(name, help, MetricType::Gauge, labels, value);
  }
  void gauge(std::string_view name, std::string_view help, std::initializer_list<LabelView> labels,
             double value) {
    add(name, help, MetricType::Gauge, LabelSpan(labels.begin(), labels.size()), value);
  }
  void counter(std::string_view name, std::string_view help, LabelSpan labels, double value) {
    add(name, help, MetricType::Counter, labels, value);
  }
  void counter(std::string_view name, std::string_view help,
               std::initializer_list<LabelView> labels, double value) {
    add(name, help, MetricType::Counter, LabelSpan(labels.begin(), labels.size()), value);
  }

 protected:
  /// One sample of family `name`; a family's samples are kept together, in the order of
  /// the family's first sample.
  virtual void add(std::string_view name, std::string_view help, MetricType type, LabelSpan labels,
                   double value) = 0;
};

/// Builds prometheus-cpp families in a fixed order; a family without any sample is left out.
class Families final : public MetricOut {
 public:
  std::vector<MetricFamily> take() { return std::move(families_); }

 private:
  void add(std::string_view name, std::string_view help, MetricType type, LabelSpan labels,
           double value) override {
    ClientMetric metric;
    for (const auto& [label, text] : labels) {
      metric.label.push_back({std::string(label), std::string(text)});
    }
    (type == MetricType::Counter ? metric.counter.value : metric.gauge.value) = value;
    family(name, help, type).metric.push_back(std::move(metric));
  }
  MetricFamily& family(std::string_view name, std::string_view help, MetricType type) {
    if (!families_.empty() && families_.back().name == name) return families_.back();
    for (MetricFamily& family : families_) {
      if (family.name == name) return family;
    }
    families_.push_back({std::string(name), std::string(help), type, {}});
    return families_.back();
  }

  std::vector<MetricFamily> families_;
};

void filesystem_metrics(const WatchStep& step, MetricOut& out) {
  std::set<std::string> shm_seen;
  for (const FilesystemSample& filesystem : step.sample.filesystems) {
    const std::string role(to_string(filesystem.role));
    out.gauge("headroom_filesystem_up",
              "1 when the watched path could be measured, 0 when it vanished, failed or hangs",
              {{"path", filesystem.path}, {"role", role}}, filesystem.ok ? 1 : 0);
    out.gauge("headroom_filesystem_stuck",
              "1 when statfs of the path's filesystem has not answered within probe_timeout",
              {{"path", filesystem.path}, {"mountpoint", filesystem.mountpoint}, {"role", role}},
              filesystem.stuck ? 1 : 0);
    if (filesystem.expect_mount && filesystem.ok) {
      out.gauge("headroom_mount_missing",
                "1 when a path configured as a mount point (--mount) is not one",
                {{"path", filesystem.path}, {"mountpoint", filesystem.mountpoint}},
                filesystem.is_mount ? 0 : 1);
    }
    if (!filesystem.ok) continue;
    // device and fstype as node_exporter names them, for joins with its series.
    const Labels labels = {{"path", filesystem.path},
                           {"mountpoint", filesystem.mountpoint},
                           {"device", filesystem.source},
                           {"fstype", filesystem.fstype},
                           {"role", role}};
    const double avail = static_cast<double>(filesystem.avail_bytes);
    const double size = static_cast<double>(filesystem.total_bytes);
    out.gauge("headroom_filesystem_avail_bytes", "Bytes an unprivileged writer can still write",
              labels, avail);
    out.gauge("headroom_filesystem_size_bytes", "Size of the filesystem in bytes", labels, size);
    out.gauge("headroom_filesystem_free_bytes",
              "Free bytes of the filesystem, including those reserved for root (f_bfree)", labels,
              static_cast<double>(filesystem.free_bytes));
    out.gauge("headroom_filesystem_files", "Inodes of the filesystem", labels,
              static_cast<double>(filesystem.total_inodes));
    out.gauge("headroom_filesystem_files_free", "Free inodes of the filesystem", labels,
              static_cast<double>(filesystem.avail_inodes));
    const FillEstimate* estimate = step.predictions.filesystem(filesystem.path);
    if (const auto rate = estimate != nullptr ? fill_rate(*estimate) : std::nullopt) {
      out.gauge("headroom_filesystem_fill_rate_bytes_per_second",
                "Bytes per second the filesystem fills at (Theil-Sen over the window); "
                "negative: freeing",
                labels, *rate);
    }
    if (estimate != nullptr && estimate->eta_seconds) {
      out.gauge("headroom_filesystem_fill_eta_seconds",
                "Predicted seconds until the filesystem is full; absent when not filling", labels,
                *estimate->eta_seconds);
    }
    // /dev/shm again under its own family: the usual mountpoint!~"^/dev" and
    // fstype!="tmpfs" selectors of node_exporter dashboards drop it otherwise.
    if (filesystem.role == FsRole::kShm && shm_seen.insert(filesystem.path).second) {
      const Labels shm = {{"path", filesystem.path},
                          {"mountpoint", filesystem.mountpoint},
                          {"device", filesystem.source},
                          {"fstype", filesystem.fstype}};
      out.gauge("headroom_shm_avail_bytes", "Bytes still free in /dev/shm", shm, avail);
      out.gauge("headroom_shm_size_bytes", "Size of /dev/shm in bytes", shm, size);
      if (estimate != nullptr && estimate->eta_seconds) {
        out.gauge("headroom_shm_fill_eta_seconds", "Predicted seconds until /dev/shm is full", shm,
                  *estimate->eta_seconds);
      }
    }
  }
}

void host_metrics(const Sample& sample, const Predictions& predictions, MetricOut& out) {
  if (sample.shm_stale_bytes) {
    out.gauge("headroom_shm_stale_bytes",
              "Bytes of /dev/shm files proven held open or mapped by no process", {},
              static_cast<double>(*sample.shm_stale_bytes));
  }
  if (sample.shm_unknown_bytes) {
    out.gauge("headroom_shm_unknown_bytes",
              "Bytes of /dev/shm files with no holder seen that could not be proven stale "
              "(processes of other users not inspectable)",
              {}, static_cast<double>(*sample.shm_unknown_bytes));
  }
  if (sample.memory) {
    out.gauge("headroom_memory_total_bytes", "MemTotal", {},
              static_cast<double>(sample.memory->total_bytes));
    out.gauge("headroom_memory_available_bytes", "MemAvailable", {},
              static_cast<double>(sample.memory->available_bytes));
    out.gauge("headroom_swap_total_bytes", "SwapTotal", {},
              static_cast<double>(sample.memory->swap_total_bytes));
    out.gauge("headroom_swap_free_bytes", "SwapFree", {},
              static_cast<double>(sample.memory->swap_free_bytes));
    if (predictions.memory && predictions.memory->eta_seconds) {
      out.gauge("headroom_memory_fill_eta_seconds",
                "Predicted seconds until available memory (capped by the cgroup) runs out", {},
                *predictions.memory->eta_seconds);
    }
  }
  if (sample.pressure) {
    // Ratios 0-1, as Prometheus names them (the kernel's avg10 is a percent).
    out.gauge("headroom_memory_psi_some_avg10_ratio",
              "Share (0-1) of the last 10s some task stalled on memory", {},
              sample.pressure->some_avg10 / 100);
    out.gauge("headroom_memory_psi_full_avg10_ratio",
              "Share (0-1) of the last 10s all non-idle tasks stalled on memory", {},
              sample.pressure->full_avg10 / 100);
    out.counter("headroom_memory_psi_full_seconds_total",
                "Total time all non-idle tasks stalled on memory", {},
                static_cast<double>(sample.pressure->full_total_us) / 1e6);
  }
  if (sample.cgroup) {
    const Labels labels = {{"cgroup", sample.cgroup->path}};
    if (sample.cgroup->limit_bytes) {
      out.gauge("headroom_cgroup_memory_limit_bytes", "Effective memory limit of the cgroup",
                labels, static_cast<double>(*sample.cgroup->limit_bytes));
    }
    out.gauge("headroom_cgroup_memory_usage_bytes", "Memory charged to the cgroup", labels,
              static_cast<double>(sample.cgroup->usage_bytes));
    // Two names, not one with a scope label: the host's counter already counts
    // the cgroup's kills, so a sum over one name counted each such kill twice.
    out.counter("headroom_cgroup_oom_kills_total",
                "Processes the OOM killer took in the memory cgroup (memory.events oom_kill)",
                labels, static_cast<double>(sample.cgroup->oom_kills));
  }
  if (sample.system_oom_kills) {
    out.counter("headroom_oom_kills_total",
                "Processes the OOM killer took on the host, in any cgroup (/proc/vmstat oom_kill)",
                {}, static_cast<double>(*sample.system_oom_kills));
  }
  if (sample.fds && sample.fds->system) {
    out.gauge("headroom_file_handles_allocated", "File handles allocated system-wide (file-nr)", {},
              static_cast<double>(sample.fds->open));
    out.gauge("headroom_file_handles_max", "fs.file-max", {},
              static_cast<double>(sample.fds->limit));
  } else if (sample.fds) {
    out.gauge("headroom_fds_open", "Open file descriptors of the watched process", {},
              static_cast<double>(sample.fds->open));
    if (sample.fds->limit != Limit::kUnlimited) {
      out.gauge("headroom_fds_limit", "RLIMIT_NOFILE soft limit", {},
                static_cast<double>(sample.fds->limit));
    }
  }
  for (const ProbeStatus& probe : sample.probes) {
    out.gauge("headroom_probe_success", "1 when the probe succeeded in the last sample",
              {{"probe", probe.probe}}, probe.success ? 1 : 0);
    out.gauge("headroom_probe_duration_seconds", "Time the probe took in the last sample",
              {{"probe", probe.probe}}, probe.duration_seconds);
  }
}

/// The families of a sink's counters: name, help, and which counter.
struct SinkFamily {
  const char* name;
  const char* help;
  std::uint64_t SinkStats::*field;
};
constexpr SinkFamily kSinkFamilies[] = {
    {"headroom_alert_sink_sent_total", "Alert events delivered", &SinkStats::sent},
    {"headroom_alert_sink_failed_total", "Alert events given up after retries", &SinkStats::failed},
    {"headroom_alert_sink_dropped_total", "Alert events dropped: the sink's queue was full",
     &SinkStats::dropped},
};

void sink_metrics(const std::vector<SinkStats>& sinks, MetricOut& out) {
  for (const SinkStats& sink : sinks) {
    const Labels labels = {{"sink", sink.sink}, {"target", sink.target}};
    for (const SinkFamily& family : kSinkFamilies) {
      out.counter(family.name, family.help, labels, static_cast<double>(sink.*family.field));
    }
  }
}

constexpr const char* kSampleAgeHelp =
    "Seconds since the last sample was taken: grows when sampling is stuck";
constexpr const char* kCompleteAgeHelp =
    "Seconds since the last sample that measured every watched path (none hung)";

std::string_view label_name(const LabelView& label) { return label.first; }
std::string_view label_value(const LabelView& label) { return label.second; }

/// Appends the Prometheus text format to a string, as prometheus-cpp's TextSerializer
/// writes it (escaped label values, help as is; values in their shortest exact text where
/// it writes 16 digits) but without iostreams: the whole page once per sample, and at
/// scrape time the few lines that change, into strings whose capacity is kept.
class TextWriter {
 public:
  explicit TextWriter(std::string& out) : out_(out) {}
  void family(std::string_view name, std::string_view help, std::string_view type) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    out_ += help;
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
  }
  template <typename Labels>
  void sample(std::string_view name, const Labels& labels, double value) {
    out_ += name;
    char separator = '{';
    for (const auto& label : labels) {
      out_ += separator;
      out_ += label_name(label);
      out_ += "=\"";
      escape(label_value(label));
      out_ += '"';
      separator = ',';
    }
    if (separator == ',') out_ += '}';
    if (std::isnan(value)) {
      out_ += " Nan\n";
    } else if (std::isinf(value)) {
      out_ += value < 0 ? " -Inf\n" : " +Inf\n";
    } else {
      // The shortest text that reads back as the same double (fmt's Dragonbox): exact, and
      // an eighth of the time of a fixed 16 digits, which took the slow path for byte counts.
      // Most values are whole numbers (bytes, counts, 0 and 1): those below 2^53 are written
      // as integers, the same text, without the float formatter.
      std::array<char, 40> text{};  // the longest double, "-2.2250738585072014e-308", fits
      text[0] = ' ';
      char* end = nullptr;
      if (std::abs(value) < 0x1p53 && value == std::trunc(value) &&
          !(value == 0 && std::signbit(value))) {
        const fmt::format_int whole(static_cast<std::int64_t>(value));
        end = std::copy(whole.data(), whole.data() + whole.size(), text.data() + 1);
      } else {
        end = fmt::format_to(text.data() + 1, "{}", value);
      }
      *end++ = '\n';
      out_.append(text.data(), end);
    }
  }
  void sample(std::string_view name, std::initializer_list<LabelView> labels, double value) {
    sample<std::initializer_list<LabelView>>(name, labels, value);
  }

 private:
  void escape(std::string_view value) {
    // One pass over the value (find_first_of tries each of the three characters at each
    // position): most values have nothing to escape and are copied whole.
    if (std::none_of(value.begin(), value.end(),
                     [](char c) { return c == '\\' || c == '"' || c == '\n'; })) {
      out_ += value;
      return;
    }
    for (const char c : value) {
      if (c == '\\' || c == '"') {
        out_ += '\\';
        out_ += c;
      } else if (c == '\n') {
        out_ += "\\n";
      } else {
        out_ += c;
      }
    }
  }
  std::string& out_;
};

/// Every metric of a snapshot, in a fixed order (names: docs/metrics.md).
void all_metrics(const Snapshot& snapshot, MetricOut& out) {
  filesystem_metrics(snapshot.step, out);
  host_metrics(snapshot.step.sample, snapshot.step.predictions, out);
  // Every rule and severity, 0 when none fires: a series that vanished would
  // read as "no data", not as "nothing firing".
  // Sorted by rule and severity, as a map would be (the page's order), in a buffer kept
  // between samples.
  using RuleKey = std::pair<std::string_view, std::string_view>;
  static const std::vector<RuleKey> kRules = [] {
    std::vector<RuleKey> rules;
    for (const RuleSeverity& rule : alert_rules()) {
      rules.emplace_back(rule.rule, to_string(rule.severity));
    }
    std::sort(rules.begin(), rules.end());
    rules.erase(std::unique(rules.begin(), rules.end()), rules.end());
    return rules;
  }();
  thread_local std::vector<std::pair<RuleKey, int>> firing;
  firing.clear();
  for (const RuleKey& rule : kRules) firing.emplace_back(rule, 0);
  for (const auto& [key, alert] : snapshot.active) {
    const RuleKey rule{alert.last.rule, to_string(alert.last.severity)};
    auto at = std::lower_bound(firing.begin(), firing.end(), rule,
                               [](const auto& entry, const RuleKey& k) { return entry.first < k; });
    if (at == firing.end() || at->first != rule) at = firing.insert(at, {rule, 0});
    ++at->second;
    // The newest OOM victim while its alert fires, for rules to name it.
    const auto& labels = alert.last.labels;
    if (alert.last.rule == "oom_kill" && labels.count("comm") != 0) {
      out.gauge(
          "headroom_oom_kill_victim_info",
          "The newest process the OOM killer took, while its alert fires (from dmesg)",
          {{"pid", labels.at("pid")}, {"comm", labels.at("comm")}, {"cgroup", labels.at("cgroup")}},
          1);
    }
  }
  for (const auto& [rule_severity, count] : firing) {
    out.gauge("headroom_alerts_firing", "Alerts of the rule firing now",
              {{"rule", rule_severity.first}, {"severity", rule_severity.second}}, count);
  }
  sink_metrics(snapshot.sinks, out);
  out.counter("headroom_samples_total", "Samples taken", {},
              static_cast<double>(snapshot.samples_total));
  out.gauge("headroom_sample_duration_seconds", "Time the last sample took", {},
            snapshot.sample_duration_seconds);
  out.gauge("headroom_sample_timestamp_seconds", "Unix time of the last sample", {},
            std::chrono::duration<double>(snapshot.step.sample.time.time_since_epoch()).count());
  out.gauge("headroom_config_last_reload_successful", "1 when the last config (re)load succeeded",
            {}, snapshot.config_last_reload_success);
  out.gauge("headroom_build_info", "Version of headroom", {{"version", HEADROOM_VERSION}}, 1);
}

/// The page's text, family by family, in buffers kept from one publish to the next: in a
/// steady state rendering a sample allocates only the page itself.
class TextFamilies final : public MetricOut {
 public:
  void render(const Snapshot& snapshot, std::string& page) {
    order_.clear();
    for (Family& family : families_) {
      family.used = false;
      family.text.clear();
    }
    all_metrics(snapshot, *this);
    std::size_t size = 0;
    for (const std::size_t at : order_) size += families_[at].text.size();
    page.reserve(size);
    for (const std::size_t at : order_) page += families_[at].text;
  }

 private:
  struct Family {
    std::string name;
    std::string header;  ///< its HELP and TYPE lines, written once
    std::string text;
    bool used = false;
  };
  void add(std::string_view name, std::string_view help, MetricType type, LabelSpan labels,
           double value) override {
    if (last_ >= families_.size() || families_[last_].name != name) {
      // Per-filesystem families come round in the same order for each filesystem: the one
      // wanted is most often the next one, so the search starts there and wraps around.
      const std::size_t count = families_.size();
      std::size_t found = count;
      for (std::size_t step = 1; step <= count; ++step) {
        const std::size_t at = (last_ + step) % count;
        if (families_[at].name == name) {
          found = at;
          break;
        }
      }
      if (found == count) {
        Family added{std::string(name), {}, {}, false};
        TextWriter(added.header)
            .family(name, help, type == MetricType::Counter ? "counter" : "gauge");
        families_.push_back(std::move(added));
      }
      last_ = found;
    }
    Family& family = families_[last_];
    if (!family.used) {
      family.used = true;
      order_.push_back(last_);
      family.text = family.header;
    }
    TextWriter(family.text).sample(name, labels, value);
  }

  std::vector<Family> families_;
  std::vector<std::size_t> order_;
  std::size_t last_ = 0;
};

}  // namespace

std::vector<MetricFamily> to_metric_families(const Snapshot& snapshot) {
  Families out;
  all_metrics(snapshot, out);
  return out.take();
}

void SnapshotCollector::publish(std::shared_ptr<const Snapshot> snapshot) {
  thread_local TextFamilies families;  // the watch loop's: its buffers serve every sample
  auto text = std::make_shared<std::string>();
  if (snapshot) families.render(*snapshot, *text);
  std::shared_ptr<const std::string> rendered = std::move(text);
  std::lock_guard lock(mutex_);
  snapshot_ = std::move(snapshot);
  rendered_ = std::move(rendered);
}

void SnapshotCollector::set_sinks(std::vector<LiveSink> sinks) {
  auto shared = std::make_shared<const std::vector<LiveSink>>(std::move(sinks));
  std::lock_guard lock(mutex_);
  sinks_ = std::move(shared);
}

std::shared_ptr<const std::string> SnapshotCollector::page(
    std::chrono::steady_clock::time_point now, std::string& tail) const {
  tail.clear();
  std::shared_ptr<const Snapshot> snapshot;
  std::shared_ptr<const std::string> rendered;
  std::shared_ptr<const std::vector<LiveSink>> sinks;
  {
    std::lock_guard lock(mutex_);
    snapshot = snapshot_;
    rendered = rendered_;
    sinks = sinks_;
  }
  if (!snapshot) return nullptr;
  TextWriter out(tail);
  out.family("headroom_sample_age_seconds", kSampleAgeHelp, "gauge");
  out.sample("headroom_sample_age_seconds", {},
             std::chrono::duration<double>(now - snapshot->taken).count());
  if (snapshot->last_complete) {
    out.family("headroom_last_complete_sample_age_seconds", kCompleteAgeHelp, "gauge");
    out.sample("headroom_last_complete_sample_age_seconds", {},
               std::chrono::duration<double>(now - *snapshot->last_complete).count());
  }
  if (sinks && !sinks->empty()) {
    for (const SinkFamily& family : kSinkFamilies) {
      out.family(family.name, family.help, "counter");
      for (const LiveSink& sink : *sinks) {
        const SinkStats now_stats{{},
                                  {},
                                  sink.counters->sent.load(),
                                  sink.counters->failed.load(),
                                  sink.counters->dropped.load()};
        out.sample(family.name, {{"sink", sink.sink}, {"target", sink.target}},
                   static_cast<double>(now_stats.*family.field));
      }
    }
  }
  return rendered;
}

std::string SnapshotCollector::text(std::chrono::steady_clock::time_point now) const {
  std::string tail;
  const auto rendered = page(now, tail);
  return rendered ? *rendered + tail : tail;
}

}  // namespace headroom::daemon
