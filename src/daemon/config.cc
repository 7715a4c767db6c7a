// Reads a watch config from TOML (toml++) into a DaemonConfig, recording the
// line that set each key; config_check.cc checks the result.
#include "daemon/config.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/toml.h"
#include "core/toml_text.h"
#include "core/units.h"

namespace headroom::daemon {

std::string_view to_string(SinkKind kind) {
  switch (kind) {
    case SinkKind::kStderr:
      return "stderr";
    case SinkKind::kJsonl:
      return "jsonl";
    case SinkKind::kWebhook:
      return "webhook";
    case SinkKind::kSlack:
      return "slack";
    case SinkKind::kWecom:
      return "wecom";
    case SinkKind::kFeishu:
      return "feishu";
    case SinkKind::kExec:
      return "exec";
    case SinkKind::kSignal:
      return "signal";
  }
  return "stderr";
}

namespace {

/// Turns a node into a value or an Error "<source>:<line>: <key>: <reason>",
/// and records which line set each key.
class Reader {
 public:
  Reader(const std::string& source, std::map<std::string, Origin, std::less<>>& origins)
      : source_(source), origins_(origins) {}

  [[nodiscard]] Origin origin(const toml::node& node) const {
    return Origin{source_, node.source().begin.line, {}};
  }
  /// Remembers that `node` set `key` ("alerts.warn_percent"), for validate()'s errors.
  void record(std::string key, const toml::node& node) const {
    origins_[std::move(key)] = origin(node);
  }

  [[nodiscard]] Error error(const toml::node& node, std::string_view key,
                            std::string_view reason) const {
    return Error::invalid(
        fmt::format("{}:{}: {}: {}", source_, node.source().begin.line, key, reason));
  }
  [[nodiscard]] Result<std::string> string(const toml::node& node, std::string_view key) const {
    if (const auto* value = node.as_string()) return value->get();
    return fail(error(node, key, "expected a string"));
  }
  [[nodiscard]] Result<double> number(const toml::node& node, std::string_view key) const {
    if (const auto* value = node.as_floating_point()) return value->get();
    if (const auto* value = node.as_integer()) return static_cast<double>(value->get());
    return fail(error(node, key, "expected a number"));
  }
  /// A percentage: out of [0, 100] is an error on its own line (the rules'
  /// cross-checks, such as critical >= warn, come after the whole file).
  [[nodiscard]] Result<double> percent(const toml::node& node, std::string_view key) const {
    auto value = number(node, key);
    if (value && (*value < 0 || *value > 100)) {
      return fail(error(node, key, "must be between 0 and 100"));
    }
    return value;
  }
  [[nodiscard]] Result<bool> boolean(const toml::node& node, std::string_view key) const {
    if (const auto* value = node.as_boolean()) return value->get();
    return fail(error(node, key, "expected true or false"));
  }
  /// "5s", "250ms", or a bare number of seconds.
  [[nodiscard]] Result<std::chrono::milliseconds> duration(const toml::node& node,
                                                           std::string_view key) const {
    if (const auto* value = node.as_string()) {
      auto parsed = parse_duration(value->get());
      if (!parsed) return fail(error(node, key, parsed.error().message));
      return *parsed;
    }
    if (auto seconds = number(node, key)) {
      return std::chrono::milliseconds(static_cast<std::int64_t>(*seconds * 1000));
    }
    return fail(error(node, key, "expected a duration such as \"5s\""));
  }
  [[nodiscard]] Result<std::uint64_t> size(const toml::node& node, std::string_view key) const {
    if (const auto* value = node.as_integer()) {
      if (value->get() < 0) return fail(error(node, key, "must not be negative"));
      return static_cast<std::uint64_t>(value->get());
    }
    const auto text = string(node, key);
    if (!text) return fail(error(node, key, "expected a size such as \"20GiB\""));
    auto parsed = parse_size(*text);
    if (!parsed) return fail(error(node, key, parsed.error().message));
    return *parsed;
  }
  /// A string or an array of strings.
  [[nodiscard]] Result<std::vector<std::string>> strings(const toml::node& node,
                                                         std::string_view key) const {
    if (const auto* value = node.as_string()) return std::vector<std::string>{value->get()};
    const auto* array = node.as_array();
    if (array == nullptr) return fail(error(node, key, "expected a string or a list of strings"));
    std::vector<std::string> values;
    for (const toml::node& item : *array) {
      auto text = string(item, key);
      if (!text) return fail(text.error());
      values.push_back(*text);
    }
    return values;
  }

 private:
  const std::string& source_;
  std::map<std::string, Origin, std::less<>>& origins_;
};

std::chrono::seconds whole_seconds(std::chrono::milliseconds duration) {
  return std::chrono::duration_cast<std::chrono::seconds>(duration);
}

Result<void> apply_alerts(const Reader& reader, const toml::table& table, AlertConfig& alerts) {
  // No structured binding: the lambdas below capture `node`, which C++20
  // allows but clang 14 (clang-tidy) does not.
  for (const auto& entry : table) {
    const toml::node& node = entry.second;
    const std::string_view key = entry.first.str();
    Result<void> applied;
    const auto set_number = [&](double& target) {
      return reader.number(node, key).map([&](double value) { target = value; });
    };
    const auto set_percent = [&](double& target) {
      return reader.percent(node, key).map([&](double value) { target = value; });
    };
    const auto set_seconds = [&](std::chrono::seconds& target) {
      return reader.duration(node, key).map(
          [&](std::chrono::milliseconds value) { target = whole_seconds(value); });
    };
    if (key == "warn_percent") {
      applied = set_percent(alerts.warn_percent);
    } else if (key == "critical_percent") {
      applied = set_percent(alerts.critical_percent);
    } else if (key == "clear_margin_percent") {
      applied = set_percent(alerts.usage_clear_margin);
    } else if (key == "eta_horizon") {
      applied = set_seconds(alerts.eta_horizon);
    } else if (key == "eta_min_span") {
      applied = reader.duration(node, key).map(
          [&](std::chrono::milliseconds value) { alerts.eta_min_span = whole_seconds(value); });
    } else if (key == "memory_eta_below_percent") {
      applied = set_percent(alerts.memory_eta_below_percent.emplace());
    } else if (key == "eta_clear_factor") {
      applied = set_number(alerts.eta_clear_factor);
    } else if (key == "psi_full_percent") {
      applied = set_percent(alerts.psi_full_threshold);
    } else if (key == "psi_for") {
      applied = set_seconds(alerts.psi_for);
    } else if (key == "oom_quiet") {
      applied = set_seconds(alerts.oom_quiet);
    } else if (key == "oom_scope") {
      applied = reader.string(node, key).and_then([&](const std::string& text) -> Result<void> {
        auto scope = parse_oom_scope(text);
        if (!scope) return fail(reader.error(node, key, scope.error().message));
        alerts.oom_scope = *scope;
        return {};
      });
    } else if (key == "repeat_interval") {
      applied = set_seconds(alerts.repeat_interval);
    } else if (key == "clear_samples") {
      applied = reader.number(node, key).map(
          [&](double value) { alerts.clear_samples = static_cast<int>(value); });
    } else if (key == "ckpt_size") {
      applied =
          reader.size(node, key).map([&](std::uint64_t value) { alerts.checkpoint_bytes = value; });
    } else if (key == "keep") {
      applied = reader.size(node, key).map([&](std::uint64_t value) { alerts.keep = value; });
    } else {
      return fail(reader.error(node, key, "unknown key in [alerts]"));
    }
    if (!applied) return applied;
    reader.record(fmt::format("alerts.{}", key), node);
  }
  return {};
}

/// One sink target of [sinks]: a string, validated on its own line.
Result<void> add_sink(const Reader& reader, const toml::node& node, std::string_view key,
                      SinkKind kind, DaemonConfig& config) {
  auto target = reader.string(node, key);
  if (!target) return fail(target.error());
  SinkSpec sink(kind, std::move(*target), reader.origin(node));
  if (auto valid = validate(sink); !valid) {
    return fail(reader.error(node, key, valid.error().message));
  }
  config.sinks.push_back(std::move(sink));
  return {};
}

Result<void> apply_sinks(const Reader& reader, const toml::table& table, DaemonConfig& config) {
  static constexpr std::pair<std::string_view, SinkKind> kKinds[] = {
      {"jsonl", SinkKind::kJsonl},  {"webhook", SinkKind::kWebhook}, {"slack", SinkKind::kSlack},
      {"wecom", SinkKind::kWecom},  {"feishu", SinkKind::kFeishu},   {"exec", SinkKind::kExec},
      {"signal", SinkKind::kSignal}};
  for (const auto& [raw_key, node] : table) {
    const std::string_view key = raw_key.str();
    if (key == "stderr") {
      auto enabled = reader.boolean(node, key);
      if (!enabled) return fail(enabled.error());
      config.stderr_alerts = *enabled;
      reader.record("sinks.stderr", node);
      continue;
    }
    const auto* kind = std::find_if(std::begin(kKinds), std::end(kKinds),
                                    [&](const auto& entry) { return entry.first == key; });
    if (kind == std::end(kKinds)) return fail(reader.error(node, key, "unknown sink in [sinks]"));
    if (node.is_string()) {
      if (auto added = add_sink(reader, node, key, kind->second, config); !added) return added;
      continue;
    }
    // Each target of a list on its own line: an error points at the one that is wrong.
    const auto* targets = node.as_array();
    if (targets == nullptr)
      return fail(reader.error(node, key, "expected a string or a list of strings"));
    for (const toml::node& target : *targets) {
      if (auto added = add_sink(reader, target, key, kind->second, config); !added) return added;
    }
  }
  return {};
}

Result<void> apply_delivery(const Reader& reader, const toml::table& table,
                            DeliveryOptions& delivery) {
  for (const auto& [raw_key, node] : table) {
    const std::string_view key = raw_key.str();
    Result<void> applied;
    if (key == "timeout") {
      applied = reader.duration(node, key).map([&](auto value) { delivery.timeout = value; });
    } else if (key == "backoff") {
      applied = reader.duration(node, key).map([&](auto value) { delivery.backoff = value; });
    } else if (key == "retries") {
      applied = reader.size(node, key).map(
          [&](std::uint64_t value) { delivery.retries = static_cast<int>(value); });
    } else if (key == "queue") {
      applied = reader.size(node, key).map(
          [&](std::uint64_t value) { delivery.queue_capacity = static_cast<std::size_t>(value); });
    } else {
      return fail(reader.error(node, key, "unknown key in [delivery]"));
    }
    if (!applied) return applied;
    reader.record(fmt::format("delivery.{}", key), node);
  }
  return {};
}

Result<void> apply_top(const Reader& reader, const toml::table& root, DaemonConfig& config) {
  for (const auto& [raw_key, node] : root) {
    const std::string_view key = raw_key.str();
    Result<void> applied;
    if (key == "interval") {
      applied = reader.duration(node, key).map([&](auto value) { config.interval = value; });
    } else if (key == "window") {
      applied = reader.duration(node, key).map([&](auto value) { config.watch.window = value; });
    } else if (key == "listen") {
      applied = reader.string(node, key).map(
          [&](std::string value) { config.listen = std::move(value); });
    } else if (key == "host") {
      applied =
          reader.string(node, key).map([&](std::string value) { config.host = std::move(value); });
    } else if (key == "dirs") {
      applied = reader.strings(node, key).map([&](const std::vector<std::string>& dirs) {
        config.watch.sample.dirs.assign(dirs.begin(), dirs.end());
      });
    } else if (key == "mounts") {
      applied = reader.strings(node, key).map([&](const std::vector<std::string>& mounts) {
        config.watch.sample.mounts.assign(mounts.begin(), mounts.end());
      });
    } else if (key == "state_file") {
      applied = reader.string(node, key).map(
          [&](std::string value) { config.state_file = std::move(value); });
    } else if (key == "pid_file") {
      applied = reader.string(node, key).map(
          [&](std::string value) { config.pid_file = std::move(value); });
    } else if (key == "probe_timeout") {
      applied = reader.duration(node, key).map(
          [&](auto value) { config.watch.sample.probe_timeout = value; });
    } else if (key == "temp_dir") {
      applied =
          reader.boolean(node, key).map([&](bool value) { config.watch.sample.temp_dir = value; });
    } else if (key == "shm") {
      applied = reader.boolean(node, key).map([&](bool value) { config.watch.sample.shm = value; });
    } else if (key == "shm_stale") {
      applied =
          reader.boolean(node, key).map([&](bool value) { config.watch.sample.shm_stale = value; });
    } else if (key == "alerts" || key == "sinks" || key == "delivery") {
      const auto* table = node.as_table();
      if (table == nullptr) return fail(reader.error(node, key, "expected a table"));
      if (key == "alerts") applied = apply_alerts(reader, *table, config.watch.alerts);
      if (key == "sinks") applied = apply_sinks(reader, *table, config);
      if (key == "delivery") applied = apply_delivery(reader, *table, config.delivery);
    } else {
      return fail(reader.error(node, key, "unknown key"));
    }
    if (!applied) return applied;
    reader.record(std::string(key), node);
  }
  return {};
}

}  // namespace

Result<void> apply_toml(std::string_view text, const std::string& source, DaemonConfig& config,
                        Check check) {
  // An empty file is more likely a deploy caught half-way than a wish for the
  // defaults: a reload would silently drop every sink.
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    return fail(Error::invalid(fmt::format("{}: the file is empty", source)));
  }
  if (const auto control = find_toml_control(text)) {
    return fail(Error::invalid(
        fmt::format("{}:{}: not valid TOML: {}", source, control->line, control->describe())));
  }
  toml::table root;
  try {
    root = toml::parse(text, source);
  } catch (const toml::parse_error& error) {
    std::string reason(error.description());
    std::replace(reason.begin(), reason.end(), '\n', ' ');
    return fail(Error::invalid(
        fmt::format("{}:{}: not valid TOML: {}", source, error.source().begin.line, reason)));
  }
  DaemonConfig updated = config;
  if (auto applied = apply_top(Reader(source, updated.origins), root, updated); !applied) {
    return applied;
  }
  if (check == Check::kNow) {
    if (auto valid = validate(updated); !valid) return valid;
  }
  config = std::move(updated);
  return {};
}

Result<void> apply_toml_file(const std::filesystem::path& path, DaemonConfig& config, Check check) {
  constexpr std::size_t kLimit = std::size_t{1} << 20;
  const SysRoot host("/");
  auto text = host.read(path, kLimit + 1);
  if (!text) return fail(text.error());
  if (text->size() > kLimit) {
    return fail(
        Error::invalid(fmt::format("{}: larger than 1 MiB, not a watch config", path.string())));
  }
  return apply_toml(*text, path.string(), config, check);
}

}  // namespace headroom::daemon
