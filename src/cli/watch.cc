// headroom watch: continuous sampling with time-to-full prediction, alerts to
// sinks and a Prometheus /metrics endpoint. Flags override the TOML config;
// SIGHUP re-reads both. Exit codes: 0 stopped by SIGINT/SIGTERM (or --once
// with no alert firing), 1 --once/--count ended with an alert firing, 2 usage.
// No iostreams and no CLI11 here: this file is most of headroom-watch's own
// code (watch_args.h).

#include <fmt/format.h>

#include <charconv>
#include <cstdio>
#include <memory>
#include <mutex>

#include "cli/watch_args.h"
#include "core/alerts/watch_json.h"
#include "core/units.h"

#ifdef HEADROOM_HAVE_DAEMON
#include "daemon/config.h"
#include "daemon/watch_loop.h"

namespace headroom::cli {

namespace {

using daemon::DaemonConfig;
using daemon::SinkKind;
using enum WatchOpt;

/// The value of a numeric flag, when given; "--count: 'x' is not a number" otherwise.
template <typename Number>
Result<void> number_flag(const WatchArgs& args, WatchOpt option, Number& out) {
  const std::string* text = args.last(option);
  if (text == nullptr) return {};
  Number value{};
  const auto [end, error] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (error != std::errc() || end != text->data() + text->size()) {
    return fail(Error::invalid(fmt::format("{}: '{}' is not a number", flag_name(option), *text)));
  }
  out = value;
  return {};
}

/// Defaults, then the config file, then the flags that were given.
Result<DaemonConfig> load_config(const WatchArgs& args) {
  DaemonConfig config;
  config.watch.sample.dirs.clear();
  if (const std::string* file = args.last(kConfig)) {
    // Checked below with the flags applied: a flag may mend what the file got wrong.
    if (auto applied = daemon::apply_toml_file(*file, config, daemon::Check::kLater); !applied) {
      return fail(applied.error());
    }
  }
  using Ms = std::chrono::milliseconds;
  using Seconds = std::chrono::seconds;
  const auto apply_duration = [&](WatchOpt option, auto&& set) -> Result<void> {
    const std::string* text = args.last(option);
    if (text == nullptr) return {};
    auto parsed = parse_duration(*text);
    if (!parsed) {
      return fail(Error::invalid(fmt::format("{}: {}", flag_name(option), parsed.error().message)));
    }
    set(*parsed);
    return {};
  };
  const auto to_seconds = [](Ms value) { return std::chrono::duration_cast<Seconds>(value); };
  std::int64_t keep = 1;
  std::int64_t retries = 3;
  std::int64_t queue = 256;
  for (const auto& applied :
       {apply_duration(kInterval, [&](Ms value) { config.interval = value; }),
        apply_duration(kWindow, [&](Ms value) { config.watch.window = value; }),
        apply_duration(kEtaHorizon,
                       [&](Ms value) { config.watch.alerts.eta_horizon = to_seconds(value); }),
        apply_duration(kRepeat,
                       [&](Ms value) { config.watch.alerts.repeat_interval = to_seconds(value); }),
        apply_duration(kPsiFor, [&](Ms value) { config.watch.alerts.psi_for = to_seconds(value); }),
        apply_duration(kWebhookTimeout, [&](Ms value) { config.delivery.timeout = value; }),
        number_flag(args, kKeep, keep), number_flag(args, kWebhookRetries, retries),
        number_flag(args, kQueue, queue),
        number_flag(args, kWarnPercent, config.watch.alerts.warn_percent),
        number_flag(args, kCriticalPercent, config.watch.alerts.critical_percent),
        number_flag(args, kPsiThreshold, config.watch.alerts.psi_full_threshold),
        number_flag(args, kClearSamples, config.watch.alerts.clear_samples)}) {
    if (!applied) return fail(applied.error());
  }
  if (args.has(kDir)) config.watch.sample.dirs.assign(args.all(kDir).begin(), args.all(kDir).end());
  if (const std::string* listen = args.last(kListen)) {
    config.listen = listen->empty() ? std::string(daemon::kDefaultListen) : *listen;
  }
  if (const std::string* text = args.last(kCkptSize)) {
    auto size = parse_size(*text);
    if (!size) return fail(Error::invalid("--ckpt-size: " + size.error().message));
    config.watch.alerts.checkpoint_bytes = *size;
  }
  if (args.has(kKeep)) {
    if (keep < 1) return fail(Error::invalid("--keep must be >= 1"));
    config.watch.alerts.keep = static_cast<std::uint64_t>(keep);
  }
  if (args.has(kNoStderr)) config.stderr_alerts = false;
  if (args.has(kNoShmStale)) config.watch.sample.shm_stale = false;
  if (args.has(kWebhookRetries)) {
    if (retries < 0) return fail(Error::invalid("--webhook-retries must be >= 0"));
    config.delivery.retries = static_cast<int>(retries);
  }
  if (args.has(kQueue)) {
    if (queue < 1) return fail(Error::invalid("--queue must be >= 1"));
    config.delivery.queue_capacity = static_cast<std::size_t>(queue);
  }
  constexpr std::pair<WatchOpt, SinkKind> kSinkFlags[] = {
      {kWebhook, SinkKind::kWebhook}, {kSlack, SinkKind::kSlack}, {kWecom, SinkKind::kWecom},
      {kFeishu, SinkKind::kFeishu},   {kExec, SinkKind::kExec},   {kSignal, SinkKind::kSignal},
      {kJsonl, SinkKind::kJsonl}};
  for (const auto& [option, kind] : kSinkFlags) {
    for (const std::string& target : args.all(option)) {
      daemon::SinkSpec sink{kind, target, daemon::Origin::of_flag(flag_name(option))};
      if (auto valid = daemon::validate(sink); !valid) {
        return fail(
            Error::invalid(fmt::format("{}: {}", flag_name(option), valid.error().message)));
      }
      config.sinks.push_back(std::move(sink));
    }
  }
  // The keys the flags set: validate() names the flag when one of them is wrong.
  constexpr std::pair<WatchOpt, const char*> kFlagKeys[] = {
      {kInterval, "interval"},
      {kWindow, "window"},
      {kEtaHorizon, "alerts.eta_horizon"},
      {kRepeat, "alerts.repeat_interval"},
      {kPsiFor, "alerts.psi_for"},
      {kKeep, "alerts.keep"},
      {kWarnPercent, "alerts.warn_percent"},
      {kCriticalPercent, "alerts.critical_percent"},
      {kPsiThreshold, "alerts.psi_full_percent"},
      {kClearSamples, "alerts.clear_samples"},
      {kCkptSize, "alerts.ckpt_size"},
      {kWebhookTimeout, "delivery.timeout"},
      {kWebhookRetries, "delivery.retries"},
      {kQueue, "delivery.queue"}};
  for (const auto& [option, key] : kFlagKeys) {
    if (args.has(option)) config.origins[key] = daemon::Origin::of_flag(flag_name(option));
  }
  if (auto valid = daemon::validate(config); !valid) return fail(valid.error());
  return config;
}

std::string eta_cell(const FillEstimate* estimate) {
  if (estimate == nullptr || !estimate->rate) return "collecting";
  if (!estimate->eta_seconds) return "not filling";
  return format_duration(std::chrono::seconds(static_cast<std::int64_t>(*estimate->eta_seconds)));
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

/// Runs the daemon with the parsed flags until a signal or --once/--count ends it.
int run_watch_command(const std::shared_ptr<const WatchArgs>& args) {
  auto config = load_config(*args);
  if (!config) return usage_error(config.error().message);
  std::int64_t count = 0;
  if (auto valid = number_flag(*args, kCount, count); !valid) {
    return usage_error(valid.error().message);
  }
  if (count < 0) return usage_error("--count must be >= 0");
  const Globals& globals = args->globals;
  const Context context = make_context(globals);
  const bool once = args->has(kOnce);
  std::mutex output;
  daemon::LoopHooks hooks;
  hooks.reload = [args] { return load_config(*args); };
  hooks.log = [&output](const std::string& line) {
    std::lock_guard lock(output);
    fmt::print(stderr, "headroom watch: {}\n", line);
  };
  hooks.max_samples = once ? 1 : static_cast<std::uint64_t>(count);
  const bool bounded = hooks.max_samples != 0;
  std::uint64_t steps = 0;
  // --json: one JSON line per sample (pretty with --once); text: the last
  // sample of a bounded run. Flushed per line: a pipe reader sees each sample.
  hooks.on_step = [&](const WatchStep& step) {
    std::lock_guard lock(output);
    ++steps;
    if (globals.json) {
      fmt::print("{}\n", to_json(step).dump(once ? 2 : -1));
    } else if (bounded && steps == hooks.max_samples) {
      std::fputs(render_step(step).c_str(), stdout);
    }
    std::fflush(stdout);
  };
  auto firing = daemon::run_watch(context, *config, hooks);
  if (!firing) return usage_error(firing.error().message);
  return bounded && *firing ? static_cast<int>(kExitFindings) : static_cast<int>(kExitOk);
}

}  // namespace

int watch_main(int argc, char** argv) {
  auto args = parse_watch_args(argc, argv);
  if (!args) {
    fmt::print(stderr, "headroom: {}\nRun 'headroom watch --help' for usage.\n",
               args.error().message);
    return kExitUsage;
  }
  if (args->has(kHelp)) {
    std::fputs(watch_help().c_str(), stdout);
    return kExitOk;
  }
  if (args->has(kVersion)) {
    fmt::print("headroom {}\n", HEADROOM_VERSION);
    return kExitOk;
  }
  return run_watch_command(std::make_shared<const WatchArgs>(std::move(*args)));
}

}  // namespace headroom::cli

#else  // no daemon library: watch cannot run

namespace headroom::cli {
int watch_main(int, char**) { return usage_error("watch: built without the daemon library"); }
}  // namespace headroom::cli

#endif
