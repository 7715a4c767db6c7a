#pragma once
// The arguments of `headroom watch`, parsed from one option table with glibc's
// getopt_long. headroom-watch, the daemon binary, runs for weeks on every host
// of a fleet; CLI11 was a fifth of its code (bench/RESULTS-watch.md), so watch
// does not use it: both binaries hand the whole argv to parse_watch_args, and
// headroom's CLI11 table only routes `watch` here.

#include <map>
#include <string>
#include <vector>

#include "cli/globals.h"
#include "core/error.h"

namespace headroom::cli {

/// Every watch flag, and the global flags watch accepts anywhere in argv.
enum class WatchOpt : int {
  kConfig = 256,  // above every char, so getopt_long's return values never collide
  kInterval,
  kWindow,
  kDir,
  kListen,
  kOnce,
  kCount,
  kCkptSize,
  kKeep,
  kWarnPercent,
  kCriticalPercent,
  kEtaHorizon,
  kRepeat,
  kPsiThreshold,
  kPsiFor,
  kClearSamples,
  kWebhook,
  kSlack,
  kWecom,
  kFeishu,
  kExec,
  kSignal,
  kJsonl,
  kNoStderr,
  kNoShmStale,
  kWebhookTimeout,
  kWebhookRetries,
  kQueue,
  kHost,
  kOomScope,
  kCheckConfig,
  kMount,
  kState,
  kPidFile,
  // global flags
  kJson,
  kNoColor,
  kVerbose,
  kRoot,
  kHostRoot,
  kHelp,
  kVersion,
};

/// A parsed watch command line: the flags given, each with every value in order.
struct WatchArgs {
  Globals globals;
  std::map<WatchOpt, std::vector<std::string>> given;

  [[nodiscard]] bool has(WatchOpt option) const { return given.contains(option); }
  /// The last value of a flag given more than once (a later flag wins), or nullptr.
  [[nodiscard]] const std::string* last(WatchOpt option) const;
  /// All values of a repeatable flag (--dir, --webhook, ...), empty when not given.
  [[nodiscard]] const std::vector<std::string>& all(WatchOpt option) const;
};

/// "--interval" for WatchOpt::kInterval: how errors name a flag.
[[nodiscard]] std::string flag_name(WatchOpt option);

/// Parses `headroom [GLOBAL...] watch [FLAG...]` (headroom-watch also takes it
/// without the word watch). Errors name the flag and what was wrong.
[[nodiscard]] Result<WatchArgs> parse_watch_args(int argc, char** argv);

/// The text of `headroom watch --help`, rendered from the option table.
[[nodiscard]] std::string watch_help();

/// `headroom watch` on this argv: parses it, runs the daemon, returns the exit code.
int watch_main(int argc, char** argv);

}  // namespace headroom::cli
