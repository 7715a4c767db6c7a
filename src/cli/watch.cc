// headroom watch: continuous sampling with time-to-full prediction, alerts to
// sinks and a Prometheus /metrics endpoint. Flags override the TOML config;
// SIGHUP re-reads both. Exit codes: 0 stopped by SIGINT/SIGTERM (or --once
// with no alert firing), 1 --once/--count ended with an alert firing, 2 usage.
// No iostreams and no CLI11 here: this file is most of headroom-watch's own
// code (watch_args.h).

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>

#include "cli/watch_args.h"
#include "cli/watch_view.h"
#include "core/alerts/watch_json.h"
#include "core/units.h"

#ifdef HEADROOM_HAVE_DAEMON
#include "daemon/config.h"
#include "daemon/watch_loop.h"

namespace headroom::cli {

namespace {

using daemon::DaemonConfig;

/// `--once` takes this many samples kOnceInterval apart (1 s in all) and prints
/// the last: one sample has no rate, and "full in: collecting" from a command
/// that exits was no answer. Enough for the estimate (FillOptions::min_samples).
constexpr std::uint64_t kOnceSamples = 5;
constexpr std::chrono::milliseconds kOnceInterval{250};
using daemon::SinkKind;
using enum WatchOpt;

/// The value of a numeric flag, when given; "Could not convert: --count = x" (CLI11's
/// words) otherwise.
template <typename Number>
Result<void> number_flag(const WatchArgs& args, WatchOpt option, Number& out) {
  const std::string* text = args.last(option);
  if (text == nullptr) return {};
  Number value{};
  const auto [end, error] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (error != std::errc() || end != text->data() + text->size()) {
    return fail(
        Error::invalid(fmt::format("Could not convert: {} = {}", flag_name(option), *text)));
  }
  out = value;
  return {};
}

/// Defaults, then the config file (--config, or --check-config's), then the flags given.
Result<DaemonConfig> load_config(const WatchArgs& args) {
  DaemonConfig config;
  config.watch.sample.dirs.clear();
  const std::string* file = args.last(kCheckConfig);
  if (file == nullptr) file = args.last(kConfig);
  if (file != nullptr) {
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
  if (args.has(kMount)) {
    config.watch.sample.mounts.assign(args.all(kMount).begin(), args.all(kMount).end());
  }
  if (const std::string* state = args.last(kState)) config.state_file = *state;
  if (const std::string* pid_file = args.last(kPidFile)) config.pid_file = *pid_file;
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
  if (const std::string* host = args.last(kHost)) config.host = *host;
  if (const std::string* text = args.last(kOomScope)) {
    auto scope = parse_oom_scope(*text);
    if (!scope) return fail(Error::invalid("--oom-scope: " + scope.error().message));
    config.watch.alerts.oom_scope = *scope;
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
      {kQueue, "delivery.queue"},
      {kHost, "host"},
      {kListen, "listen"},
      {kOomScope, "alerts.oom_scope"}};
  for (const auto& [option, key] : kFlagKeys) {
    if (args.has(option)) config.origins[key] = daemon::Origin::of_flag(flag_name(option));
  }
  // Under --root (a node agent reading the host's /proc, e.g. the DaemonSet) its own
  // cgroup is its pod's, whatever limit it has: follow the host's OOM kills.
  if (args.globals.root != "/" && config.watch.alerts.oom_scope == OomScope::kAuto) {
    config.watch.alerts.oom_scope = OomScope::kSystem;
  }
  if (auto valid = daemon::validate(config); !valid) return fail(valid.error());
  return config;
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
  if (const std::string* file = args->last(kCheckConfig)) {
    // The whole config as the daemon would run it, checked and not run: nothing is
    // bound, sampled or sent, so it works beside the running daemon.
    fmt::print("{}: ok: every {}, {} dir(s), {} mount(s), {} sink(s){}\n", *file,
               format_setting(config->interval), config->watch.sample.dirs.size(),
               config->watch.sample.mounts.size(),
               config->sinks.size() + (config->stderr_alerts ? 1 : 0),
               config->listen ? ", /metrics on " + *config->listen : std::string());
    return kExitOk;
  }
  Context context = make_context(globals);
  // Under --root (a node agent with the host's /proc at /host/proc) its own mount
  // table is its container's, where a host dir is a bind mount or on the overlay:
  // /data/checkpoints showed as mountpoint="/". The host's is init's.
  if (globals.root != "/") context.pid = "1";
  const bool once = args->has(kOnce);
  // One sample to print: nothing to scrape, and the daemon may hold the port.
  if (once) {
    config->listen.reset();
    config->interval = std::min(config->interval, kOnceInterval);
  }
  std::mutex output;
  daemon::LoopHooks hooks;
  hooks.reload = [args] { return load_config(*args); };
  hooks.log = [&output](const std::string& line) {
    std::lock_guard lock(output);
    fmt::print(stderr, "headroom watch: {}\n", line);
  };
  hooks.max_samples = once ? kOnceSamples : static_cast<std::uint64_t>(count);
  const bool bounded = hooks.max_samples != 0;
  std::uint64_t steps = 0;
  std::vector<AlertEvent> once_events;
  // On a terminal an unbounded text run redraws its view every sample; as a
  // service (stdout not a terminal) it prints nothing per sample, only alerts.
  std::optional<LiveView> live;
  if (!globals.json && !bounded && ::isatty(STDOUT_FILENO) == 1) {
    live.emplace(stdout_style(globals), config->interval, config->watch.window);
  }
  // --json: one JSON line per sample (pretty with --once); text: the last
  // sample of a bounded run. Flushed per line: a pipe reader sees each sample.
  hooks.on_step = [&](const WatchStep& step) {
    std::lock_guard lock(output);
    ++steps;
    if (globals.json && once) {
      // The last sample, with the alert events of all of them (a FIRING comes
      // with the first sample that crosses, not the last).
      once_events.insert(once_events.end(), step.events.begin(), step.events.end());
      if (steps == hooks.max_samples) {
        WatchStep last = step;
        last.events = std::move(once_events);
        fmt::print("{}\n", to_json(last).dump(2));
      }
    } else if (globals.json) {
      fmt::print("{}\n", to_json(step).dump());
    } else if (bounded && steps == hooks.max_samples) {
      std::fputs(render_step(step).c_str(), stdout);
      if (once) {
        fmt::print(
            "full in: at the rate of the last {} ({} samples); the daemon predicts over {}\n",
            format_setting(config->interval * static_cast<int>(kOnceSamples - 1)), kOnceSamples,
            format_setting(config->watch.window));
      }
    } else if (live) {
      std::fputs(live->frame(step).c_str(), stdout);
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
    fmt::print(stderr, "headroom: {}\n{}\n", args.error().message, kUsageHint);
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
