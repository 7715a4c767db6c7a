#pragma once
// The watch loop: sample on a fixed schedule, hand alert events to the sink
// workers, publish a snapshot for /metrics, reload the config on SIGHUP and
// stop on SIGINT/SIGTERM. Sampling never waits for a sink.

#include <functional>
#include <ostream>

#include "core/context.h"
#include "daemon/config.h"

namespace headroom::daemon {

/// What the front end plugs into the loop.
struct LoopHooks {
  /// Re-reads the config (file + flags) on SIGHUP; an Error keeps the running config.
  std::function<Result<DaemonConfig>()> reload;
  /// Called after every sample (the CLI prints JSON lines with --json).
  std::function<void(const WatchStep&)> on_step;
  /// Where the loop's own log lines go (reloads, sink failures, listen address).
  std::function<void(const std::string&)> log;
  /// Stop after this many samples (--once, --count); 0: run until a signal.
  std::uint64_t max_samples = 0;
};

/// Runs until SIGINT or SIGTERM (or max_samples). Returns whether any alert
/// is firing at the end. Fails (before sampling) when the listen address
/// cannot be bound or a sink cannot be built.
[[nodiscard]] Result<bool> run_watch(const Context& context, DaemonConfig config,
                                     const LoopHooks& hooks);

}  // namespace headroom::daemon
