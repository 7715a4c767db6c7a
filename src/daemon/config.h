#pragma once
// The configuration of `headroom watch`: defaults, then the TOML file, then
// flags. A config that does not parse or validate is an Error naming the file,
// line and reason, so a SIGHUP reload can keep the running config.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/alerts/watcher.h"
#include "core/error.h"

namespace headroom::daemon {

/// Where alerts go.
enum class SinkKind { kStderr, kJsonl, kWebhook, kSlack, kWecom, kFeishu, kExec, kSignal };
/// "stderr", "jsonl", "webhook", "slack", "wecom", "feishu", "exec", "signal".
[[nodiscard]] std::string_view to_string(SinkKind kind);

/// One configured sink: its kind and target (URL, file, command, "SIG:PID").
struct SinkSpec {
  SinkKind kind = SinkKind::kStderr;
  std::string target;
};

/// Delivery tuning shared by every sink.
struct DeliveryOptions {
  std::chrono::milliseconds timeout{5000};  ///< one webhook request / exec run
  int retries = 3;                          ///< after the first try
  std::chrono::milliseconds backoff{500};   ///< doubled after each retry
  std::size_t queue_capacity = 256;         ///< pending events per sink; more are dropped and counted
};

/// Everything `watch` runs with.
struct DaemonConfig {
  DaemonConfig() { watch.sample.process_fds = false; }  // the daemon's own fds say nothing

  WatchOptions watch;
  std::chrono::milliseconds interval{5000};
  std::optional<std::string> listen;  ///< "ADDR:PORT"; nullopt: no exporter
  std::vector<SinkSpec> sinks;        ///< besides stderr
  bool stderr_alerts = true;          ///< the default sink: one line per event on stderr
  DeliveryOptions delivery;
};

/// Default listen address: loopback only, so metrics are not exposed by accident.
inline constexpr const char* kDefaultListen = "127.0.0.1:9840";

/// Applies a TOML document over `config` (schema in docs/watch.md). Unknown
/// keys and bad values are errors "<source>:<line>: <reason>".
[[nodiscard]] Result<void> apply_toml(std::string_view text, const std::string& source,
                                      DaemonConfig& config);
/// Reads and applies a TOML file.
[[nodiscard]] Result<void> apply_toml_file(const std::filesystem::path& path, DaemonConfig& config);
/// Checks the whole config (interval, window, thresholds, sink targets).
[[nodiscard]] Result<void> validate(const DaemonConfig& config);
/// Parses a sink target given on the command line or in TOML, e.g. "USR1:1234" for kSignal.
[[nodiscard]] Result<void> validate(const SinkSpec& sink);

/// The signal and pid of a kSignal target.
struct SignalTarget {
  int signal = 0;
  pid_t pid = 0;
};
/// "USR1:1234", "SIGTERM:1234", "15:1234"; an Error for an unknown signal or a pid <= 0.
[[nodiscard]] Result<SignalTarget> parse_signal_target(std::string_view target);

}  // namespace headroom::daemon
