#include "cli/watch_args.h"

#include <fmt/format.h>
#include <getopt.h>

#include <algorithm>
#include <array>
#include <string_view>

namespace headroom::cli {

namespace {

enum class Takes { kNothing, kValue, kOptionalValue };

struct OptionSpec {
  WatchOpt option;
  std::string_view name;  ///< without the dashes
  Takes takes;
  std::string_view value;  ///< the value's name in --help
  std::string_view help;   ///< empty: not listed (--root, for tests)
};

using enum WatchOpt;

constexpr auto kOptions = std::to_array<OptionSpec>({
    {kHelp, "help", Takes::kNothing, "", "Print this help message and exit"},
    {kConfig, "config", Takes::kValue, "FILE",
     "TOML config file (docs/watch.md); flags override it"},
    {kCheckConfig, "check-config", Takes::kValue, "FILE",
     "check a config file (with the other flags applied) and exit: 0 valid, 2 not"},
    {kInterval, "interval", Takes::kValue, "DURATION",
     "time between samples, e.g. 5s, 200ms (default 5s)"},
    {kWindow, "window", Takes::kValue, "DURATION", "how far back predictions look (default 10m)"},
    {kDir, "dir", Takes::kValue, "PATH", "a directory the job writes to (repeatable)"},
    {kMount, "mount", Takes::kValue, "PATH",
     "a dir that must be a mount point: alert when it is not (repeatable)"},
    {kListen, "listen", Takes::kOptionalValue, "[ADDR:PORT]",
     "serve /metrics on IPV4:PORT or [IPV6]:PORT (127.0.0.1:9840 without a value)"},
    {kOnce, "once", Takes::kNothing, "", "take one sample, print it with predictions, exit"},
    {kCount, "count", Takes::kValue, "N", "stop after this many samples (scripts, tests)"},
    {kCkptSize, "ckpt-size", Takes::kValue, "SIZE", "size of one checkpoint, e.g. 20GiB"},
    {kKeep, "keep", Takes::kValue, "N", "checkpoints kept at once (warn when fewer more fit)"},
    {kWarnPercent, "warn-percent", Takes::kValue, "PERCENT", "usage that warns (default 85)"},
    {kCriticalPercent, "critical-percent", Takes::kValue, "PERCENT",
     "usage that is critical (default 95)"},
    {kEtaHorizon, "eta-horizon", Takes::kValue, "DURATION",
     "alert when full sooner than this (default 1h)"},
    {kRepeat, "repeat", Takes::kValue, "DURATION",
     "resend a firing alert this often (default 1h; 0: never)"},
    {kPsiThreshold, "psi-threshold", Takes::kValue, "PERCENT",
     "memory PSI full avg10 percent (default 10)"},
    {kPsiFor, "psi-for", Takes::kValue, "DURATION", "... held for this long (default 30s)"},
    {kOomScope, "oom-scope", Takes::kValue, "SCOPE",
     "OOM kills to alert on: auto, cgroup (this one's), system (the host's)"},
    {kClearSamples, "clear-samples", Takes::kValue, "N",
     "clear samples in a row before an alert resolves (default 3)"},
    {kWebhook, "webhook", Takes::kValue, "URL", "POST alert JSON to this URL (repeatable)"},
    {kSlack, "slack", Takes::kValue, "URL", "Slack-compatible incoming webhook URL"},
    {kWecom, "wecom", Takes::kValue, "URL", "WeCom group robot webhook URL"},
    {kFeishu, "feishu", Takes::kValue, "URL", "Feishu/Lark custom bot webhook URL"},
    {kExec, "exec", Takes::kValue, "CMD",
     "run this shell command per alert (HEADROOM_ALERT_* in its environment)"},
    {kSignal, "signal", Takes::kValue, "SIG:PID",
     "send SIG to PID when an alert fires, e.g. USR1:1234"},
    {kJsonl, "jsonl", Takes::kValue, "FILE", "append alert events as JSON lines"},
    {kNoStderr, "no-stderr", Takes::kNothing, "", "no alert lines on stderr"},
    {kNoShmStale, "no-shm-stale", Takes::kNothing, "",
     "skip the stale /dev/shm scan (a /proc walk)"},
    {kWebhookTimeout, "webhook-timeout", Takes::kValue, "DURATION",
     "per request / per command (default 5s)"},
    {kWebhookRetries, "webhook-retries", Takes::kValue, "N",
     "retries after a failed delivery (default 3)"},
    {kQueue, "queue", Takes::kValue, "N", "pending alerts per sink before dropping (default 256)"},
    {kHost, "host", Takes::kValue, "NAME",
     "this machine's name in alerts sent off it (default: its host name)"},
    {kState, "state", Takes::kValue, "FILE",
     "keep the firing alerts here: a restart resolves what ended meanwhile"},
    {kPidFile, "pid-file", Takes::kValue, "FILE", "write the daemon's pid here (for kill -HUP)"},
    {kJson, "json", Takes::kNothing, "",
     "one JSON line per sample, pretty with --once (schema: docs/json.md)"},
    {kNoColor, "no-color", Takes::kNothing, "", "no colour even on a terminal (also: NO_COLOR=1)"},
    {kVerbose, "verbose", Takes::kNothing, "", "more detail"},
    {kHostRoot, "host-root", Takes::kValue, "DIR",
     "the host's / is mounted at DIR (a node agent's /host)"},
    {kRoot, "root", Takes::kValue, "DIR", ""},  // --host-root's former, unlisted name
    {kVersion, "version", Takes::kNothing, "", "Display program version information and exit"},
});

/// Where the global flags start in kOptions (--help lists them apart).
constexpr std::string_view kFirstGlobal = "json";

const OptionSpec* find_spec(int value) {
  const auto* spec = std::find_if(kOptions.begin(), kOptions.end(), [&](const OptionSpec& entry) {
    return static_cast<int>(entry.option) == value;
  });
  return spec == kOptions.end() ? nullptr : spec;
}

/// The flag as the user typed it, for "unknown flag" errors.
std::string offending(int argc, char** argv) {
  const int at = optind - 1;
  return at >= 0 && at < argc ? std::string(argv[at]) : std::string("?");
}

// The errors are worded as CLI11 words them for every other command (app.cc),
// so a typo reads the same whichever command it was made in.
Result<WatchArgs> usage(std::string message) { return fail(Error::invalid(std::move(message))); }

Result<WatchArgs> not_expected(std::string_view word) {
  return usage(fmt::format("The following argument was not expected: {}", word));
}

}  // namespace

const std::string* WatchArgs::last(WatchOpt option) const {
  const auto found = given.find(option);
  return found == given.end() || found->second.empty() ? nullptr : &found->second.back();
}

const std::vector<std::string>& WatchArgs::all(WatchOpt option) const {
  static const std::vector<std::string> kNone;
  const auto found = given.find(option);
  return found == given.end() ? kNone : found->second;
}

std::string flag_name(WatchOpt option) {
  const OptionSpec* spec = find_spec(static_cast<int>(option));
  return spec == nullptr ? std::string("--?") : fmt::format("--{}", spec->name);
}

Result<WatchArgs> parse_watch_args(int argc, char** argv) {
  std::vector<option> longs;
  for (const OptionSpec& spec : kOptions) {
    const int has_arg = spec.takes == Takes::kNothing ? no_argument
                        : spec.takes == Takes::kValue ? required_argument
                                                      : optional_argument;
    longs.push_back({spec.name.data(), has_arg, nullptr, static_cast<int>(spec.option)});
  }
  longs.push_back({});

  WatchArgs args;
  args.globals.argc = argc;
  args.globals.argv = argv;
  bool saw_command = false;
  opterr = 0;  // the errors below name the flag; getopt's own would not say "watch"
  optind = 0;  // a fresh scan (glibc), whatever ran before
  // "-": words come back in order as 1, so POSIXLY_CORRECT cannot end the scan
  // at `watch`; ":": a flag without its value returns ':', not '?'.
  for (;;) {
    const int got = ::getopt_long(argc, argv, "-:hv", longs.data(), nullptr);
    if (got == -1) break;
    if (got == 1) {
      if (!saw_command && std::string_view(optarg) == "watch") {
        saw_command = true;
        continue;
      }
      return not_expected(optarg);
    }
    if (got == '?') {
      const OptionSpec* spec = find_spec(optopt);
      if (spec != nullptr) {  // --once=1: a flag given a value
        const std::string word = offending(argc, argv);
        const std::size_t equals = word.find('=');
        return usage(fmt::format("Could not convert: --{} = {}", spec->name,
                                 equals == std::string::npos ? word : word.substr(equals + 1)));
      }
      return not_expected(optopt > 0 && optopt < 256 ? fmt::format("-{}", static_cast<char>(optopt))
                                                     : offending(argc, argv));
    }
    if (got == ':') {
      const OptionSpec* spec = find_spec(optopt);
      if (spec == nullptr) return not_expected(offending(argc, argv));
      return usage(fmt::format("--{}: 1 required {} missing", spec->name, spec->value));
    }
    const WatchOpt option = got == 'h' ? kHelp : got == 'v' ? kVerbose : static_cast<WatchOpt>(got);
    std::string value = optarg != nullptr ? optarg : "";
    // `--listen 127.0.0.1:9840` as well as `--listen=...`: getopt takes an
    // optional value only after '=', but the common spelling is a separate word.
    if (option == kListen && optarg == nullptr && optind < argc && argv[optind][0] != '-' &&
        std::string_view(argv[optind]) != "watch") {
      value = argv[optind++];
    }
    args.given[option].push_back(std::move(value));
  }
  if (optind < argc) {  // after "--"
    return not_expected(argv[optind]);
  }
  args.globals.json = args.has(kJson);
  args.globals.no_color = args.has(kNoColor);
  args.globals.verbose = args.has(kVerbose);
  // --root is --host-root's former name; --host-root wins when both are given.
  if (const std::string* root = args.last(kRoot)) args.globals.root = *root;
  if (const std::string* root = args.last(kHostRoot)) args.globals.root = *root;
  if (auto checked = check_host_root(args.globals.root); !checked)
    return usage(checked.error().message);
  return args;
}

std::string watch_help() {
  // CLI11's layout (app.cc): the description, Usage, then one line per option
  // with its help at column 30, or on the next line when the flag is longer.
  std::string out =
      "monitor disks, /dev/shm and memory: time-to-full, alerts, Prometheus /metrics\n"
      "Usage: headroom watch [OPTIONS]\n\nOptions:\n";
  for (const OptionSpec& spec : kOptions) {
    if (spec.help.empty()) continue;
    if (spec.name == kFirstGlobal) out += "\nGlobal options (also before `watch`):\n";
    std::string flag = spec.option == kHelp      ? std::string("-h,--help")
                       : spec.option == kVerbose ? std::string("-v,--verbose")
                                                 : fmt::format("--{}", spec.name);
    if (!spec.value.empty()) flag += fmt::format(" {}", spec.value);
    constexpr std::size_t kColumn = 28;
    out += flag.size() < kColumn ? fmt::format("  {:<28}{}\n", flag, spec.help)
                                 : fmt::format("  {}\n  {:<28}{}\n", flag, "", spec.help);
  }
  out +=
      "\nExit: 0 stopped by SIGINT/SIGTERM (or --once/--count with no alert firing),\n"
      "1 --once/--count ended with an alert firing, 2 usage error. docs/watch.md has more.\n";
  return out;
}

}  // namespace headroom::cli
