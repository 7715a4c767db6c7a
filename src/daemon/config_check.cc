// validate(): the checks of a whole watch config, each error naming the line
// or flag to change. Reading the TOML is config.cc; this is what is checked
// once the file and the flags are both applied.
#include <arpa/inet.h>
#include <fmt/format.h>

#include <charconv>
#include <chrono>
#include <limits>

#include "core/signal_names.h"
#include "core/thresholds.h"
#include "core/units.h"
#include "daemon/config.h"
#include "daemon/redact.h"

namespace headroom::daemon {

Result<SignalTarget> parse_signal_target(std::string_view target) {
  const std::size_t colon = target.find(':');
  if (colon == std::string_view::npos || colon == 0) {
    return fail(Error::invalid(fmt::format("'{}' is not SIGNAL:PID (e.g. USR1:1234)", target)));
  }
  auto signal = parse_signal(target.substr(0, colon));
  if (!signal) return fail(signal.error());
  // 0 and negative pids would signal a process group, watch's own included.
  const std::string_view digits = target.substr(colon + 1);
  pid_t pid = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), pid);
  if (digits.empty() || error != std::errc{} || end != digits.data() + digits.size() || pid <= 0) {
    return fail(Error::invalid(fmt::format("'{}': '{}' is not a process id", target, digits)));
  }
  return SignalTarget{*signal, pid};
}

Result<std::string> parse_listen_address(std::string_view address) {
  const auto bad = [&](std::string_view why) -> Result<std::string> {
    return fail(
        Error::invalid(fmt::format("'{}' {} (use IPV4:PORT or [IPV6]:PORT, e.g. {} or [::1]:9840)",
                                   address, why, kDefaultListen)));
  };
  const std::size_t colon = address.rfind(':');
  std::string_view host = colon == std::string_view::npos ? "" : address.substr(0, colon);
  const std::string_view digits =
      colon == std::string_view::npos ? address : address.substr(colon + 1);
  const bool bracketed = host.starts_with('[') && host.ends_with(']') && host.size() > 2;
  if (!bracketed && host.find_first_of("[]:") != std::string_view::npos) {
    return bad("has an IPv6 address without brackets");
  }
  unsigned port = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
  if (digits.empty() || error != std::errc() || end != digits.data() + digits.size() ||
      port > 65535) {
    return bad(fmt::format("has no port 0-65535 ('{}')", digits));
  }
  if (bracketed) {
    const std::string inner(host.substr(1, host.size() - 2));
    in6_addr parsed6{};
    if (inet_pton(AF_INET6, inner.c_str(), &parsed6) != 1) {
      return bad(fmt::format("has no IPv6 address ('{}' is not one)", inner));
    }
    char text[INET6_ADDRSTRLEN] = {};
    inet_ntop(AF_INET6, &parsed6, text, sizeof text);
    return fmt::format("[{}]:{}", text, port);
  }
  if (host.empty() || host == "localhost") host = "127.0.0.1";
  in_addr parsed{};
  if (inet_pton(AF_INET, std::string(host).c_str(), &parsed) != 1) {
    return bad(
        fmt::format("has no IPv4 address ('{}' is not one; host names are not resolved)", host));
  }
  return fmt::format("{}:{}", host, port);
}

Result<void> validate(const SinkSpec& sink) {
  switch (sink.kind) {
    case SinkKind::kStderr:
      return {};
    case SinkKind::kJsonl:
      if (sink.target.empty()) return fail(Error::invalid("jsonl needs a file path"));
      return {};
    case SinkKind::kWebhook:
    case SinkKind::kSlack:
    case SinkKind::kWecom:
    case SinkKind::kFeishu:
      if (sink.target.rfind("http://", 0) != 0 && sink.target.rfind("https://", 0) != 0) {
        return fail(
            Error::invalid(fmt::format("'{}' is not an http(s) URL", redact_url(sink.target))));
      }
      return {};
    case SinkKind::kExec:
      if (sink.target.empty()) return fail(Error::invalid("exec needs a command"));
      return {};
    case SinkKind::kSignal: {
      auto target = parse_signal_target(sink.target);
      if (!target) return fail(target.error());
      return {};
    }
  }
  return {};
}

namespace {

/// A sink's target as an error may show it: webhook URLs without path, user info and
/// query (the secrets), no exec command (it may hold a token).
std::string shown_target(const SinkSpec& sink) {
  switch (sink.kind) {
    case SinkKind::kExec:
      return "...";
    case SinkKind::kWebhook:
    case SinkKind::kSlack:
    case SinkKind::kWecom:
    case SinkKind::kFeishu:
      return redact_url(sink.target);
    default:
      return sink.target;
  }
}

/// What a user calls a key: "warn_percent" for "alerts.warn_percent".
std::string_view leaf(std::string_view key) {
  const std::size_t dot = key.rfind('.');
  return dot == std::string_view::npos ? key : key.substr(dot + 1);
}

bool is_default(const Origin& origin) { return origin.flag.empty() && origin.file.empty(); }

/// Settings in the order they were applied: defaults, the file line by line, flags.
std::size_t rank(const Origin& origin) {
  if (!origin.flag.empty()) return std::numeric_limits<std::size_t>::max();
  return origin.line;
}

/// The start of an error about a setting: "watch.toml:12: critical_percent",
/// "--critical-percent", or "critical_percent" for a default.
std::string label(const Origin& origin, std::string_view name) {
  if (!origin.flag.empty()) return origin.flag;
  if (!origin.file.empty()) return fmt::format("{}:{}: {}", origin.file, origin.line, name);
  return std::string(name);
}

/// Where the other setting of a pair was set, seen from the blamed one: "line 11"
/// of the same file, else "watch.toml:11", "--warn-percent" or "default".
std::string where(const Origin& other, const Origin& blamed) {
  if (is_default(other)) return "default";
  if (!other.flag.empty()) return other.flag;
  if (blamed.flag.empty() && blamed.file == other.file) return fmt::format("line {}", other.line);
  return fmt::format("{}:{}", other.file, other.line);
}

/// "200ms", "30s", "1h 30m": a duration as a config file would say it.
std::string show(std::chrono::milliseconds duration) { return format_setting(duration); }
std::string show(std::chrono::seconds duration) { return format_setting(duration); }
/// "85", "85.5".
std::string show(double number) { return fmt::format("{}", number); }

/// One side of a check between two keys: the key, its value as written, and
/// how the error reads when this key is the one to change.
struct Setting {
  std::string_view key;
  std::string value;
  std::string_view relation;  ///< "is below" in "critical_percent 80 is below warn_percent 85"
};

/// The checks of validate(), each error blaming the key to change.
class Checker {
 public:
  explicit Checker(const DaemonConfig& config) : config_(config) {}

  /// An error unless `ok`: "<where key was set> <value> <reason>".
  [[nodiscard]] Result<void> require(bool ok, std::string_view key, const std::string& value,
                                     std::string_view reason) const {
    if (ok) return {};
    return fail(
        Error::invalid(fmt::format("{} {} {}", label(origin(key), leaf(key)), value, reason)));
  }
  /// An error unless `ok`, blaming whichever of the two was set later.
  [[nodiscard]] Result<void> require(bool ok, const Setting& first, const Setting& second,
                                     std::string_view consequence = {}) const {
    if (ok) return {};
    const bool second_later = rank(origin(second.key)) > rank(origin(first.key));
    const Setting& blamed = second_later ? second : first;
    const Setting& other = second_later ? first : second;
    const Origin& blamed_origin = origin(blamed.key);
    return fail(
        Error::invalid(fmt::format("{} {} {} {} {} ({}){}", label(blamed_origin, leaf(blamed.key)),
                                   blamed.value, blamed.relation, leaf(other.key), other.value,
                                   where(origin(other.key), blamed_origin), consequence)));
  }
  /// The listen address is one the HTTP server takes as meant.
  [[nodiscard]] Result<void> listen() const {
    if (!config_.listen) return {};
    const auto parsed = parse_listen_address(*config_.listen);
    if (parsed) return {};
    return fail(Error::invalid(
        fmt::format("{} {}", label(origin("listen"), "listen"), parsed.error().message)));
  }
  /// Each sink valid on its own, and none configured twice (every alert would go out twice).
  [[nodiscard]] Result<void> sinks() const {
    const auto& sinks = config_.sinks;
    for (std::size_t later = 0; later < sinks.size(); ++later) {
      const SinkSpec& sink = sinks[later];
      if (auto valid = validate(sink); !valid) {
        return fail(Error::invalid(fmt::format("{}: {}", label(sink.origin, to_string(sink.kind)),
                                               valid.error().message)));
      }
      for (std::size_t earlier = 0; earlier < later; ++earlier) {
        if (!same(sinks[earlier], sink)) continue;
        const bool swap = rank(sinks[earlier].origin) > rank(sink.origin);
        const SinkSpec& blamed = swap ? sinks[earlier] : sink;
        const SinkSpec& other = swap ? sink : sinks[earlier];
        return fail(Error::invalid(fmt::format(
            "{} '{}' is already a sink ({})", label(blamed.origin, to_string(blamed.kind)),
            shown_target(blamed), where(other.origin, blamed.origin))));
      }
    }
    return {};
  }

 private:
  [[nodiscard]] const Origin& origin(std::string_view key) const {
    static const Origin kDefault;
    const auto found = config_.origins.find(key);
    return found == config_.origins.end() ? kDefault : found->second;
  }
  /// "USR1:42" and "SIGUSR1:42" are one sink.
  [[nodiscard]] static bool same(const SinkSpec& a, const SinkSpec& b) {
    if (a.kind != b.kind) return false;
    if (a.kind == SinkKind::kSignal) {
      const auto first = parse_signal_target(a.target);
      const auto second = parse_signal_target(b.target);
      if (first && second) return first->signal == second->signal && first->pid == second->pid;
    }
    return a.target == b.target;
  }

  const DaemonConfig& config_;
};

}  // namespace

Result<void> validate(const DaemonConfig& config) {
  const Checker check(config);
  const AlertConfig& alerts = config.watch.alerts;
  const DeliveryOptions& delivery = config.delivery;
  const auto window = config.watch.window;
  const std::string warn = show(alerts.warn_percent);
  const std::string margin = show(alerts.usage_clear_margin);
  const auto never_negative = [&](std::string_view key, std::chrono::seconds value) {
    return check.require(value.count() >= 0, key, show(value), "must not be negative");
  };
  // The use% rule is the core's (PercentThresholds); here it is worded by where each
  // threshold was set.
  const auto percents = [&]() -> Result<void> {
    const auto broken = PercentThresholds{alerts.warn_percent, alerts.critical_percent}.violation();
    if (!broken) return {};
    if (broken->kind == ThresholdViolation::Kind::kOutOfRange) {
      return check.require(false, fmt::format("alerts.{}", broken->field), show(broken->value),
                           "must be above 0 and at most 100");
    }
    return check.require(false,
                         {"alerts.critical_percent", show(alerts.critical_percent), "is below"},
                         {"alerts.warn_percent", warn, "is above"});
  };
  for (const Result<void>& checked :
       {check.require(config.interval >= std::chrono::milliseconds(50), "interval",
                      show(config.interval), "is below the minimum 50ms"),
        check.require(window >= config.interval * 2, {"window", show(window), "is less than twice"},
                      {"interval", show(config.interval), "is more than half of"}),
        percents(),
        check.require(alerts.usage_clear_margin >= 0, "alerts.clear_margin_percent", margin,
                      "must not be negative"),
        check.require(alerts.usage_clear_margin < alerts.warn_percent,
                      {"alerts.clear_margin_percent", margin, "is not below"},
                      {"alerts.warn_percent", warn, "is not above"},
                      ", so a usage alert could never resolve"),
        check.require(alerts.eta_horizon.count() > 0, "alerts.eta_horizon",
                      show(alerts.eta_horizon), "must be longer than 0"),
        check.require(alerts.eta_clear_factor >= 1, "alerts.eta_clear_factor",
                      show(alerts.eta_clear_factor), "must be at least 1"),
        never_negative("alerts.eta_min_span",
                       alerts.eta_min_span.value_or(std::chrono::seconds(0))),
        check.require(
            !alerts.eta_min_span || *alerts.eta_min_span <= window,
            {"alerts.eta_min_span", show(alerts.eta_min_span.value_or(std::chrono::seconds(0))),
             "is longer than"},
            {"window", show(window), "is shorter than"}, ", so no fill-time alert could fire"),
        check.require(
            !alerts.memory_eta_below_percent ||
                (*alerts.memory_eta_below_percent > 0 && *alerts.memory_eta_below_percent <= 100),
            "alerts.memory_eta_below_percent", show(alerts.memory_eta_below_percent.value_or(0)),
            "must be above 0 and at most 100"),
        check.require(alerts.psi_full_threshold >= 0 && alerts.psi_full_threshold <= 100,
                      "alerts.psi_full_percent", show(alerts.psi_full_threshold),
                      "must be between 0 and 100"),
        never_negative("alerts.psi_for", alerts.psi_for),
        never_negative("alerts.oom_quiet", alerts.oom_quiet),
        never_negative("alerts.repeat_interval", alerts.repeat_interval),
        check.require(!alerts.checkpoint_bytes || *alerts.checkpoint_bytes > 0, "alerts.ckpt_size",
                      "0", "must be more than 0"),
        check.require(alerts.keep >= 1, "alerts.keep", "0", "must be at least 1"),
        check.require(alerts.clear_samples >= 1, "alerts.clear_samples",
                      fmt::format("{}", alerts.clear_samples), "must be at least 1"),
        check.require(delivery.timeout.count() > 0, "delivery.timeout", show(delivery.timeout),
                      "must be longer than 0"),
        check.require(delivery.backoff.count() >= 0, "delivery.backoff", show(delivery.backoff),
                      "must not be negative"),
        check.require(delivery.retries >= 0, "delivery.retries",
                      fmt::format("{}", delivery.retries), "must not be negative"),
        check.require(delivery.queue_capacity >= 1, "delivery.queue", "0", "must be at least 1"),
        check.listen(),
        check.sinks()}) {
    if (!checked) return checked;
  }
  // The alert rules' own checks, should they gain one the lines above lack.
  return validate(alerts);
}

}  // namespace headroom::daemon
