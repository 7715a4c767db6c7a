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
#include "core/alerts/render.h"
#include "core/units.h"

#ifdef HEADROOM_HAVE_DAEMON
#include "core/text_out.h"
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
using enum WatchOpt;

/// The value of --count, when given; "Could not convert: --count = x" (CLI11's words)
/// otherwise.
Result<std::int64_t> count_flag(const WatchArgs& args) {
  const std::string* text = args.last(kCount);
  if (text == nullptr) return 0;
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (error != std::errc() || end != text->data() + text->size()) {
    return fail(
        Error::invalid(fmt::format("Could not convert: {} = {}", flag_name(kCount), *text)));
  }
  return value;
}

/// The config file (--check-config's or --config), then the flags given.
Result<DaemonConfig> load_config(const WatchArgs& args) {
  const std::string* file = args.last(kCheckConfig);
  if (file == nullptr) file = args.last(kConfig);
  std::vector<daemon::FlagValues> flags;
  for (const auto& [option, values] : args.given) flags.push_back({flag_name(option), values});
  return daemon::load_config(file ? std::optional<std::filesystem::path>(*file) : std::nullopt,
                             flags, args.globals.root != "/");
}

/// Runs the daemon with the parsed flags until a signal or --once/--count ends it.
int run_watch_command(const std::shared_ptr<const WatchArgs>& args) {
  auto config = load_config(*args);
  if (!config) return usage_error(config.error().message);
  const auto count = count_flag(*args);
  if (!count) return usage_error(count.error().message);
  if (*count < 0) return usage_error("--count must be >= 0");
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
  hooks.max_samples = once ? kOnceSamples : static_cast<std::uint64_t>(*count);
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
        fmt::print("{}\n", json_text(to_json(last), 2));
      }
    } else if (globals.json) {
      fmt::print("{}\n", json_text(to_json(step)));
    } else if (bounded && steps == hooks.max_samples) {
      std::fputs(render_watch_text(step).c_str(), stdout);
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
