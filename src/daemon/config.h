#pragma once
// The configuration of `headroom watch`: defaults, then the TOML file, then
// flags. A config that does not parse or validate is an Error naming the file,
// line and reason, so a SIGHUP reload can keep the running config.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/alerts/watcher.h"
#include "core/error.h"

namespace headroom::daemon {

/// Where alerts go.
enum class SinkKind { kStderr, kJsonl, kWebhook, kSlack, kWecom, kFeishu, kExec, kSignal };
/// "stderr", "jsonl", "webhook", "slack", "wecom", "feishu", "exec", "signal".
[[nodiscard]] std::string_view to_string(SinkKind kind);

/// Where a setting came from, so that an error can point at what to change.
/// All empty: the default.
struct Origin {
  /// Set by a command-line flag, e.g. "--critical-percent".
  [[nodiscard]] static Origin of_flag(std::string flag) { return Origin{{}, 0, std::move(flag)}; }

  std::string file;      ///< the config file whose line set it
  std::size_t line = 0;  ///< 1-based
  std::string flag;      ///< "--critical-percent" when a flag set it (flags win over the file)
};

/// One configured sink: its kind and target (URL, file, command, "SIG:PID").
struct SinkSpec {
  SinkSpec() = default;
  SinkSpec(SinkKind sink_kind, std::string sink_target, Origin sink_origin = {})
      : kind(sink_kind), target(std::move(sink_target)), origin(std::move(sink_origin)) {}

  SinkKind kind = SinkKind::kStderr;
  std::string target;
  Origin origin;  ///< not part of what the sink is: two sinks differing only here are the same
};

/// Delivery tuning shared by every sink.
struct DeliveryOptions {
  std::chrono::milliseconds timeout{5000};  ///< one webhook request / exec run
  int retries = 3;                          ///< after the first try
  std::chrono::milliseconds backoff{500};   ///< doubled after each retry
  std::size_t queue_capacity = 256;  ///< pending events per sink; more are dropped and counted
};

/// Everything `watch` runs with.
struct DaemonConfig {
  DaemonConfig() {
    watch.sample.process_fds = false;  // the daemon's own fds say nothing
    // Its own cgroup is rarely the job's: a service's or a pod's (docs/watch.md).
    watch.alerts.oom_scope = OomScope::kAuto;
  }

  WatchOptions watch;
  std::chrono::milliseconds interval{5000};
  std::optional<std::string> listen;  ///< "ADDR:PORT"; nullopt: no exporter
  /// Names this machine in alerts sent off it (webhooks, chat, JSON lines, exec); empty: the
  /// kernel's node name (uname -n). In a pod that is the pod's: the DaemonSet passes the node's.
  std::string host;
  /// Where the firing alerts are kept between runs (--state): a restart then
  /// neither re-sends what still fires nor forgets to resolve what ended. Empty: nowhere.
  std::filesystem::path state_file;
  /// Where the daemon writes its pid (--pid-file), for `kill -HUP "$(cat FILE)"`. Empty: nowhere.
  std::filesystem::path pid_file;
  std::vector<SinkSpec> sinks;  ///< besides stderr
  bool stderr_alerts = true;    ///< the default sink: one line per event on stderr
  DeliveryOptions delivery;
  /// Where each key that is not a default was set, by its TOML name
  /// ("interval", "alerts.warn_percent", "delivery.queue"), for validate()'s errors.
  std::map<std::string, Origin, std::less<>> origins;
};

/// Default listen address: loopback only, so metrics are not exposed by accident.
inline constexpr const char* kDefaultListen = "127.0.0.1:9840";

/// A listen address as the HTTP server takes it: "IPV4:PORT" or "[IPV6]:PORT"
/// (normalized: "[::1]:9840"), from those, "localhost:PORT" or a bare
/// "PORT"/":PORT" (loopback, like the default: all interfaces must be asked
/// for, "0.0.0.0:PORT" or "[::]:PORT"). Port 0 picks a free one. An error says
/// what is wrong: a malformed or out-of-range address or port, a host name, or
/// IPv6 without brackets ("::1:9840" is ambiguous).
[[nodiscard]] Result<std::string> parse_listen_address(std::string_view address);

/// When apply_toml checks the whole config: at once, or later by the caller's
/// validate() once flags are applied over the file (a flag may mend the file).
enum class Check { kNow, kLater };

/// Applies a TOML document over `config` (schema in docs/watch.md) and records
/// each key's line in config.origins. Unknown keys, bad values and an empty
/// document are errors "<source>:<line>: <reason>"; `config` changes only on success.
[[nodiscard]] Result<void> apply_toml(std::string_view text, const std::string& source,
                                      DaemonConfig& config, Check check = Check::kNow);
/// Reads and applies a TOML file; a file that cannot be read is "<path>: <strerror>".
[[nodiscard]] Result<void> apply_toml_file(const std::filesystem::path& path, DaemonConfig& config,
                                           Check check = Check::kNow);
/// A watch flag as the command line gave it: "--warn-percent" and each value in order
/// (none for a switch such as --no-stderr).
struct FlagValues {
  std::string flag;
  std::vector<std::string> values;
};

/// The config watch runs with: defaults, then `file`, then the flags that set a key, each
/// by the rules of that key in the file (docs/watch.md: the same parsing, the same checks;
/// a later value of a flag given twice wins), then validate(). Errors name the file's line
/// or the flag. Flags that set no key (--once, --json) are not this function's. With
/// `host_root` (a node agent reading the host's /proc) OOM kills are followed host-wide
/// unless the config says otherwise.
[[nodiscard]] Result<DaemonConfig> load_config(const std::optional<std::filesystem::path>& file,
                                               const std::vector<FlagValues>& flags,
                                               bool host_root);
/// Checks the whole config (interval, window, thresholds, sink targets, no
/// sink twice). The error names the key that is wrong where it was set
/// ("watch.toml:12: critical_percent 80 is below warn_percent 85 (line 11)",
/// "--critical-percent 80 is below warn_percent 85 (watch.toml:11)"); of two
/// keys that disagree, the one set later (flags after the file's lines).
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
