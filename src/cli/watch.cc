// headroom watch: continuous sampling with time-to-full prediction, alerts to
// sinks and a Prometheus /metrics endpoint. Flags override the TOML config;
// SIGHUP re-reads both. Exit codes: 0 stopped by SIGINT/SIGTERM (or --once
// with no alert firing), 1 --once/--count ended with an alert firing, 2 usage.

#include <iostream>
#include <memory>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "cli/command.h"
#include "core/alerts/watch_json.h"
#include "core/units.h"

#ifdef HEADROOM_HAVE_DAEMON
#include "daemon/config.h"
#include "daemon/watch_loop.h"

namespace headroom::cli {

namespace {

using daemon::DaemonConfig;
using daemon::SinkKind;

/// Raw flag values; only the flags given override the config file.
struct WatchFlags {
  CLI::App* app = nullptr;
  std::string config;
  std::string interval;
  std::string window;
  std::vector<std::string> dirs;
  std::string listen;
  bool once = false;
  std::int64_t count = 0;
  std::string checkpoint_size;
  std::int64_t keep = 1;
  double warn_percent = 85;
  double critical_percent = 95;
  std::string eta_horizon;
  std::string repeat;
  double psi_threshold = 10;
  std::string psi_for;
  int clear_samples = 3;
  bool no_stderr = false;
  bool no_shm_stale = false;
  std::map<SinkKind, std::vector<std::string>> sinks;
  std::string timeout;
  std::int64_t retries = 3;
  std::int64_t queue = 256;
};

bool given(const WatchFlags& flags, const std::string& name) {
  return flags.app->count(name) > 0;
}

Result<std::chrono::milliseconds> duration_flag(const std::string& flag, const std::string& text) {
  auto parsed = parse_duration(text);
  if (!parsed) return fail(Error::invalid(fmt::format("{}: {}", flag, parsed.error().message)));
  return *parsed;
}

/// Defaults, then the config file, then the flags that were given.
Result<DaemonConfig> load_config(const WatchFlags& flags) {
  DaemonConfig config;
  config.watch.sample.dirs.clear();
  if (!flags.config.empty()) {
    if (auto applied = daemon::apply_toml_file(flags.config, config); !applied) {
      return fail(applied.error());
    }
  }
  const auto apply_duration = [&](const char* flag, const std::string& text,
                                  auto&& set) -> Result<void> {
    if (!given(flags, flag)) return {};
    return duration_flag(flag, text).map(set);
  };
  using Ms = std::chrono::milliseconds;
  using Seconds = std::chrono::seconds;
  for (const auto& applied : {
           apply_duration("--interval", flags.interval, [&](Ms value) { config.interval = value; }),
           apply_duration("--window", flags.window, [&](Ms value) { config.watch.window = value; }),
           apply_duration("--eta-horizon", flags.eta_horizon,
                          [&](Ms value) {
                            config.watch.alerts.eta_horizon =
                                std::chrono::duration_cast<Seconds>(value);
                          }),
           apply_duration("--repeat", flags.repeat,
                          [&](Ms value) {
                            config.watch.alerts.repeat_interval =
                                std::chrono::duration_cast<Seconds>(value);
                          }),
           apply_duration("--psi-for", flags.psi_for,
                          [&](Ms value) {
                            config.watch.alerts.psi_for = std::chrono::duration_cast<Seconds>(value);
                          }),
           apply_duration("--webhook-timeout", flags.timeout,
                          [&](Ms value) { config.delivery.timeout = value; })}) {
    if (!applied) return fail(applied.error());
  }
  if (given(flags, "--dir")) config.watch.sample.dirs.assign(flags.dirs.begin(), flags.dirs.end());
  if (given(flags, "--listen")) {
    config.listen = flags.listen.empty() ? std::string(daemon::kDefaultListen) : flags.listen;
  }
  if (given(flags, "--ckpt-size")) {
    auto size = parse_size(flags.checkpoint_size);
    if (!size) return fail(Error::invalid("--ckpt-size: " + size.error().message));
    config.watch.alerts.checkpoint_bytes = *size;
  }
  if (given(flags, "--keep")) {
    if (flags.keep < 1) return fail(Error::invalid("--keep must be >= 1"));
    config.watch.alerts.keep = static_cast<std::uint64_t>(flags.keep);
  }
  if (given(flags, "--warn-percent")) config.watch.alerts.warn_percent = flags.warn_percent;
  if (given(flags, "--critical-percent")) {
    config.watch.alerts.critical_percent = flags.critical_percent;
  }
  if (given(flags, "--psi-threshold")) config.watch.alerts.psi_full_threshold = flags.psi_threshold;
  if (given(flags, "--clear-samples")) config.watch.alerts.clear_samples = flags.clear_samples;
  if (flags.no_stderr) config.stderr_alerts = false;
  if (flags.no_shm_stale) config.watch.sample.shm_stale = false;
  if (given(flags, "--webhook-retries")) config.delivery.retries = static_cast<int>(flags.retries);
  if (given(flags, "--queue")) {
    if (flags.queue < 1) return fail(Error::invalid("--queue must be >= 1"));
    config.delivery.queue_capacity = static_cast<std::size_t>(flags.queue);
  }
  for (const auto& [kind, targets] : flags.sinks) {
    for (const std::string& target : targets) {
      daemon::SinkSpec sink{kind, target};
      if (auto valid = daemon::validate(sink); !valid) {
        return fail(Error::invalid(fmt::format("--{}: {}", daemon::to_string(kind),
                                               valid.error().message)));
      }
      config.sinks.push_back(std::move(sink));
    }
  }
  if (auto valid = daemon::validate(config); !valid) return fail(valid.error());
  return config;
}

std::string eta_cell(const FillEstimate* estimate) {
  if (estimate == nullptr || !estimate->rate) return "collecting";
  if (!estimate->eta_seconds) return "not filling";
  return format_duration(
      std::chrono::seconds(static_cast<std::int64_t>(*estimate->eta_seconds)));
}

/// The human form of one step: the filesystems first (what fills up), then memory.
std::string render_step(const WatchStep& step) {
  std::string out;
  for (const FilesystemSample& filesystem : step.sample.filesystems) {
    if (!filesystem.ok) {
      out += fmt::format("{:<24} {:<4} not watchable: {}\n", filesystem.path,
                         to_string(filesystem.role), filesystem.error);
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
    out += fmt::format("stale /dev/shm: {}\n", format_bytes(*sample.shm_stale_bytes));
  }
  for (const ProbeStatus& probe : sample.probes) {
    if (!probe.success) out += fmt::format("probe {} failed: {}\n", probe.probe, probe.error);
  }
  return out;
}

void add_flags(CLI::App& app, WatchFlags& flags) {
  flags.app = &app;
  app.add_option("--config", flags.config, "TOML config file (docs/watch.md); flags override it");
  app.add_option("--interval", flags.interval, "time between samples, e.g. 5s, 200ms (default 5s)");
  app.add_option("--window", flags.window, "how far back predictions look (default 10m)");
  app.add_option("--dir", flags.dirs, "a directory the job writes to (repeatable)");
  app.add_option("--listen", flags.listen,
                 "serve /metrics on ADDR:PORT (default 127.0.0.1:9840 when given without value)")
      ->expected(0, 1);
  app.add_flag("--once", flags.once, "take one sample, print it with predictions, exit");
  app.add_option("--count", flags.count, "stop after this many samples (scripts, tests)");
  app.add_option("--ckpt-size", flags.checkpoint_size, "size of one checkpoint, e.g. 20GiB");
  app.add_option("--keep", flags.keep, "checkpoints kept at once (warn when fewer more fit)");
  app.add_option("--warn-percent", flags.warn_percent, "usage that warns (default 85)");
  app.add_option("--critical-percent", flags.critical_percent, "usage that is critical (default 95)");
  app.add_option("--eta-horizon", flags.eta_horizon, "alert when full sooner than this (default 1h)");
  app.add_option("--repeat", flags.repeat, "resend a firing alert this often (default 1h; 0: never)");
  app.add_option("--psi-threshold", flags.psi_threshold, "memory PSI full avg10 percent (default 10)");
  app.add_option("--psi-for", flags.psi_for, "... held for this long (default 30s)");
  app.add_option("--clear-samples", flags.clear_samples,
                 "clear samples in a row before an alert resolves (default 3)");
  app.add_option("--webhook", flags.sinks[SinkKind::kWebhook], "POST alert JSON to this URL");
  app.add_option("--slack", flags.sinks[SinkKind::kSlack], "Slack-compatible incoming webhook URL");
  app.add_option("--wecom", flags.sinks[SinkKind::kWecom], "WeCom group robot webhook URL");
  app.add_option("--feishu", flags.sinks[SinkKind::kFeishu], "Feishu/Lark custom bot webhook URL");
  app.add_option("--exec", flags.sinks[SinkKind::kExec],
                 "run this shell command per alert (HEADROOM_ALERT_* in its environment)");
  app.add_option("--signal", flags.sinks[SinkKind::kSignal],
                 "send SIG to PID when an alert fires, e.g. USR1:1234");
  app.add_option("--jsonl", flags.sinks[SinkKind::kJsonl], "append alert events as JSON lines");
  app.add_flag("--no-stderr", flags.no_stderr, "no alert lines on stderr");
  app.add_flag("--no-shm-stale", flags.no_shm_stale, "skip the stale /dev/shm scan (a /proc walk)");
  app.add_option("--webhook-timeout", flags.timeout, "per request / per command (default 5s)");
  app.add_option("--webhook-retries", flags.retries, "retries after a failed delivery (default 3)");
  app.add_option("--queue", flags.queue, "pending alerts per sink before dropping (default 256)");
}

}  // namespace

std::function<int()> setup_watch(CLI::App& app, const Globals& globals) {
  auto flags = std::make_shared<WatchFlags>();
  add_flags(app, *flags);
  return [flags, &globals]() {
    auto config = load_config(*flags);
    if (!config) return usage_error(config.error().message);
    const Context context = make_context(globals);
    if (flags->count < 0) return usage_error("--count must be >= 0");
    std::mutex output;
    daemon::LoopHooks hooks;
    hooks.reload = [flags] { return load_config(*flags); };
    hooks.log = [&output](const std::string& line) {
      std::lock_guard lock(output);
      std::cerr << "headroom watch: " << line << std::endl;
    };
    hooks.max_samples = flags->once ? 1 : static_cast<std::uint64_t>(flags->count);
    const bool bounded = hooks.max_samples != 0;
    std::uint64_t steps = 0;
    // --json: one JSON line per sample (pretty with --once); text: the last
    // sample of a bounded run.
    hooks.on_step = [&, once = flags->once](const WatchStep& step) {
      std::lock_guard lock(output);
      ++steps;
      if (globals.json) {
        std::cout << to_json(step).dump(once ? 2 : -1) << std::endl;
      } else if (bounded && steps == hooks.max_samples) {
        std::cout << render_step(step) << std::flush;
      }
    };
    auto firing = daemon::run_watch(context, *config, hooks);
    if (!firing) return usage_error(firing.error().message);
    return bounded && *firing ? static_cast<int>(kExitFindings) : static_cast<int>(kExitOk);
  };
}

}  // namespace headroom::cli

#else  // no daemon library: watch cannot run

namespace headroom::cli {
std::function<int()> setup_watch(CLI::App& app, const Globals&) {
  (void)app;
  return [] { return usage_error("watch: built without the daemon library"); };
}
}  // namespace headroom::cli

#endif
