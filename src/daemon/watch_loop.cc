#include "daemon/watch_loop.h"

#include <fmt/format.h>
#include <pthread.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "core/threads.h"
#include "daemon/alert_state.h"
#include "daemon/http_server.h"
#include "daemon/metrics.h"
#include "daemon/sink_worker.h"

namespace headroom::daemon {

namespace {

/// SIGHUP, SIGINT and SIGTERM, taken by the loop itself while it sleeps
/// between samples: they are blocked in every thread (threads started later
/// inherit the mask), stay pending, and sigtimedwait takes them. No thread of
/// its own, so none to wake, and nothing shared between threads.
class SignalWatcher {
 public:
  SignalWatcher() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGHUP);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set_, &previous_);
  }
  ~SignalWatcher() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;

  /// Sleeps until `deadline` or until a stop or reload signal arrives.
  void wait_until(std::chrono::steady_clock::time_point deadline) {
    waited_ = false;
    while (!stop_ && !reload_) {
      const auto left = deadline - std::chrono::steady_clock::now();
      if (left <= std::chrono::steady_clock::duration::zero()) return;
      const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(left);
      const timespec timeout{static_cast<time_t>(seconds.count()),
                             static_cast<long>(std::chrono::nanoseconds(left - seconds).count())};
      const int signal = sigtimedwait(&set_, nullptr, &timeout);
      waited_ = signal < 0;  // after one signal, another may be pending
      if (signal > 0) record(signal);
      // -1: EAGAIN at the deadline (checked above), or EINTR: go round again.
    }
  }
  /// A signal still pending is taken first. After a wait_until that slept to its deadline
  /// there is none to take (what comes later is taken by the next wait, at once), so the
  /// kernel is asked only after a start, a signal or an overrun: one syscall less a sample.
  bool stop_requested() {
    if (!std::exchange(waited_, false)) take_pending();
    return stop_;
  }
  /// A reload asked for by the time of the last stop_requested() or wait_until (a SIGHUP
  /// that comes later is taken at the next one).
  bool take_reload() { return std::exchange(reload_, false); }

 private:
  void record(int signal) { (signal == SIGHUP ? reload_ : stop_) = true; }
  void take_pending() {
    const timespec now{0, 0};
    for (int signal; (signal = sigtimedwait(&set_, nullptr, &now)) > 0;) record(signal);
  }

  sigset_t set_{};
  sigset_t previous_{};
  bool stop_ = false;
  bool reload_ = false;
  bool waited_ = false;  ///< the last wait_until slept to its deadline: nothing is pending
};

/// The kernel's name for this machine (uname -n); "" if it cannot say.
std::string node_name() {
  utsname names{};
  return ::uname(&names) == 0 ? std::string(names.nodename) : std::string();
}

/// The sinks of one config, each on its worker thread.
class SinkSet {
 public:
  static Result<std::unique_ptr<SinkSet>> build(const DaemonConfig& config,
                                                const LoopHooks& hooks) {
    auto set = std::make_unique<SinkSet>();
    set->host_ = config.host.empty() ? node_name() : config.host;
    std::vector<SinkSpec> specs = config.sinks;
    if (config.stderr_alerts) specs.insert(specs.begin(), {SinkKind::kStderr, ""});
    std::map<SinkKind, int> of_kind;
    for (const SinkSpec& spec : specs) {
      auto sink = make_sink(spec, config.delivery);
      if (!sink) return fail(sink.error());
      // "webhook#2": the kind and its place among the sinks of that kind, never the URL.
      std::string name = fmt::format("{}#{}", to_string(spec.kind), ++of_kind[spec.kind]);
      set->workers_.push_back(std::make_unique<SinkWorker>(
          std::move(*sink), std::move(name), config.delivery.queue_capacity,
          [log = hooks.log](const std::string& line) {
            if (log) log("alert delivery failed: " + line);
          }));
    }
    return set;
  }
  void push(const std::vector<AlertEvent>& events) {
    for (AlertEvent event : events) {
      event.host = host_;  // an alert read on another machine says which one it is about
      event.id = alert_fingerprint(host_, event.rule, event.subject, event.severity);
      for (auto& worker : workers_) worker->push(event);
    }
  }
  /// The sinks as the collector shows them, each keeping `set` (so its counters) alive.
  static std::vector<LiveSink> live(const std::shared_ptr<const SinkSet>& set) {
    std::vector<LiveSink> result;
    for (const auto& worker : set->workers_) {
      result.push_back({worker->name(), worker->target(),
                        std::shared_ptr<const SinkCounters>(set, &worker->counters())});
    }
    return result;
  }
  void stop(std::chrono::milliseconds deadline) {
    for (auto& worker : workers_) worker->stop(deadline);
  }

 private:
  std::vector<std::unique_ptr<SinkWorker>> workers_;
  std::string host_;
};

/// The HTTP exporter for one listen address (validate() accepted it), announced
/// with the address it bound: the port the kernel picked for port 0.
Result<std::unique_ptr<HttpServer>> listen_on(const std::string& address,
                                              const std::shared_ptr<SnapshotCollector>& collector,
                                              const LoopHooks& hooks) {
  auto parsed = parse_listen_address(address);
  if (!parsed) return fail(parsed.error());
  // 64 connections at a time on one thread, and a request that has not arrived
  // in 2 s dropped: idle or slow clients (a port scanner, half-open connections)
  // hold a slot for 2 s at most, and delay no other scrape.
  auto server = HttpServer::start(*parsed, collector, HttpOptions{64, std::chrono::seconds(2)});
  if (!server) {
    // The hint fits a bind that failed, not a thread the system refused.
    if (server.error().code != Error::Code::kInvalidArgument) return fail(server.error());
    return fail(Error::invalid(
        fmt::format("{} (the address is in use or not on this host)", server.error().message)));
  }
  if (hooks.log) hooks.log("serving /metrics on http://" + (*server)->address() + "/metrics");
  return server;
}

/// The paths on a hung mount in a step, with why.
std::map<std::string, std::string> stuck_paths(const WatchStep& step) {
  std::map<std::string, std::string> stuck;
  for (const FilesystemSample& filesystem : step.sample.filesystems) {
    if (filesystem.stuck) stuck.emplace(filesystem.path, filesystem.error->message);
  }
  return stuck;
}

/// Logs the paths whose mount started or stopped hanging since the previous step.
void log_stuck_changes(const std::map<std::string, std::string>& before,
                       const std::map<std::string, std::string>& now, const LoopHooks& hooks) {
  if (!hooks.log) return;
  for (const auto& [path, why] : now) {
    if (before.count(path) == 0)
      hooks.log(fmt::format("{}: {}; sampling goes on without it", path, why));
  }
  for (const auto& [path, why] : before) {
    if (now.count(path) == 0) hooks.log(fmt::format("{}: its filesystem answers again", path));
  }
}

/// Writes this process's pid to `path` (--pid-file), replacing what is there.
Result<void> write_pid_file(const std::filesystem::path& path) {
  std::FILE* file = std::fopen(path.c_str(), "we");
  if (file == nullptr) return fail(Error::from_errno(errno, path.string()));
  const bool written = std::fprintf(file, "%d\n", static_cast<int>(::getpid())) > 0;
  if (std::fclose(file) != 0 || !written) return fail(Error::from_errno(errno, path.string()));
  return {};
}

}  // namespace

Result<bool> run_watch(const Context& context, DaemonConfig config, const LoopHooks& hooks) {
  SignalWatcher signals;  // first: threads started below inherit the blocked mask
  if (!config.pid_file.empty()) {
    if (auto written = write_pid_file(config.pid_file); !written) return fail(written.error());
  }
  auto collector = std::make_shared<SnapshotCollector>();
  std::unique_ptr<HttpServer> server;
  if (config.listen) {
    auto listening = listen_on(*config.listen, collector, hooks);
    if (!listening) return fail(listening.error());
    server = std::move(*listening);
  }
  auto built = SinkSet::build(config, hooks);
  if (!built) return fail(built.error());
  std::shared_ptr<SinkSet> sinks = std::move(*built);
  collector->set_sinks(SinkSet::live(sinks));

  Watcher watcher(context, config.watch);
  if (!config.state_file.empty()) {
    auto restored = load_alert_state(config.state_file);
    if (!restored) {
      if (hooks.log) hooks.log("starting without the saved alerts: " + restored.error().message);
    } else {
      watcher.engine().restore(*restored);
      if (hooks.log && !restored->empty()) {
        hooks.log(
            fmt::format("{} alert(s) were firing before the restart: each goes on or is "
                        "resolved at the next samples",
                        restored->size()));
      }
    }
  }
  std::map<std::string, std::string> stuck;
  // Until a sample has measured every path, its age counts from the start.
  std::optional<std::chrono::steady_clock::time_point> last_complete =
      std::chrono::steady_clock::now();
  std::uint64_t samples = 0;
  double reload_ok = 1;
  auto next = std::chrono::steady_clock::now();
  while (!signals.stop_requested()) {
    if (signals.take_reload() && hooks.reload) {
      auto reloaded = hooks.reload();
      if (!reloaded) {
        reload_ok = 0;
        if (hooks.log)
          hooks.log("config reload failed, keeping the running config: " +
                    reloaded.error().message);
      } else if (auto rebuilt = SinkSet::build(*reloaded, hooks); !rebuilt) {
        reload_ok = 0;
        if (hooks.log) hooks.log("config reload failed: " + rebuilt.error().message);
      } else {
        if (reloaded->listen != config.listen) {
          server.reset();
          if (reloaded->listen) {
            auto listening = listen_on(*reloaded->listen, collector, hooks);
            if (listening) {
              server = std::move(*listening);
            } else if (hooks.log) {
              hooks.log(listening.error().message);
            }
          }
        }
        std::shared_ptr<SinkSet> old =
            std::exchange(sinks, std::shared_ptr<SinkSet>(std::move(*rebuilt)));
        collector->set_sinks(SinkSet::live(sinks));
        // The old sinks may be inside a slow delivery: let them finish on
        // their own thread so the reload never delays sampling.
        if (auto stopper = try_start_thread([old] { old->stop(std::chrono::milliseconds(0)); })) {
          stopper->detach();
        } else {
          old->stop(std::chrono::milliseconds(0));  // a task limit: on this thread, then
        }
        config = std::move(*reloaded);
        watcher.reconfigure(config.watch);
        reload_ok = 1;
        if (hooks.log) hooks.log("config reloaded");
      }
    }
    const auto started = std::chrono::steady_clock::now();
    auto step = watcher.step();
    if (!step) return fail(step.error());
    sinks->push(step->events);
    ++samples;
    auto now_stuck = stuck_paths(*step);
    log_stuck_changes(stuck, now_stuck, hooks);
    stuck = std::move(now_stuck);
    const auto finished = std::chrono::steady_clock::now();
    if (stuck.empty()) last_complete = finished;
    if (!config.state_file.empty() && !step->events.empty()) {
      if (auto saved = save_alert_state(config.state_file, watcher.engine().active());
          !saved && hooks.log) {
        hooks.log("cannot save the firing alerts: " + saved.error().message);
      }
    }
    auto snapshot = std::make_shared<Snapshot>();
    snapshot->taken = finished;
    snapshot->last_complete = last_complete;
    snapshot->step = std::move(*step);  // the snapshot keeps it; on_step reads it there
    snapshot->active = watcher.engine().active();
    snapshot->samples_total = samples;
    snapshot->sample_duration_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    snapshot->config_last_reload_success = reload_ok;
    const std::shared_ptr<const Snapshot> published = std::move(snapshot);
    collector->publish(published);
    if (hooks.on_step) hooks.on_step(published->step);
    if (hooks.max_samples != 0 && samples >= hooks.max_samples) break;
    // A fixed schedule, not "sleep interval after work": the sample times stay
    // on the grid; when a sample overran, skip the missed ticks.
    next += config.interval;
    const auto now = std::chrono::steady_clock::now();
    if (next <= now) next = now + config.interval;
    signals.wait_until(next);
  }
  server.reset();
  // Give queued alerts a moment to go out (a --once run's alerts, say).
  sinks->stop(std::chrono::milliseconds(2000));
  if (!config.pid_file.empty()) ::unlink(config.pid_file.c_str());
  return !watcher.engine().active().empty();
}

}  // namespace headroom::daemon
