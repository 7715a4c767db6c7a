// Reads a watch config from TOML (toml++) into a DaemonConfig, recording the
// line that set each key; config_check.cc checks the result.
#include "daemon/config.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <optional>
#include <type_traits>

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

/// Turns a node into a value or an Error, and records which line (or flag) set each key.
/// From a file the error is "<source>:<line>: <key>: <reason>"; from a flag, whose value is
/// always a string node, "<flag>: <reason>", or CLI11's "Could not convert: <flag> = <value>"
/// for a value of the wrong type.
class Reader {
 public:
  Reader(const std::string& source, std::map<std::string, Origin, std::less<>>& origins)
      : source_(source), origins_(origins) {}
  /// A reader of the values of `flag` ("--warn-percent").
  [[nodiscard]] static Reader of_flag(const std::string& flag,
                                      std::map<std::string, Origin, std::less<>>& origins) {
    Reader reader(flag, origins);
    reader.flag_ = true;
    return reader;
  }

  [[nodiscard]] Origin origin(const toml::node& node) const {
    if (flag_) return Origin::of_flag(source_);
    return Origin{source_, node.source().begin.line, {}};
  }
  /// Remembers that `node` set `key` ("alerts.warn_percent"), for validate()'s errors.
  void record(std::string key, const toml::node& node) const {
    origins_[std::move(key)] = origin(node);
  }

  [[nodiscard]] Error error(const toml::node& node, std::string_view key,
                            std::string_view reason) const {
    if (flag_) return Error::invalid(fmt::format("{}: {}", source_, reason));
    return Error::invalid(
        fmt::format("{}:{}: {}: {}", source_, node.source().begin.line, key, reason));
  }
  [[nodiscard]] Result<std::string> string(const toml::node& node, std::string_view key) const {
    if (const auto* value = node.as_string()) return value->get();
    return fail(mismatch(node, key, "expected a string"));
  }
  [[nodiscard]] Result<double> number(const toml::node& node, std::string_view key) const {
    if (const auto* value = node.as_floating_point()) return value->get();
    if (const auto* value = node.as_integer()) return static_cast<double>(value->get());
    if (const auto* text = node.as_string(); text != nullptr && flag_) {
      const std::string& digits = text->get();
      double value = 0;
      const auto [end, error] =
          std::from_chars(digits.data(), digits.data() + digits.size(), value);
      if (!digits.empty() && error == std::errc() && end == digits.data() + digits.size()) {
        return value;
      }
    }
    return fail(mismatch(node, key, "expected a number"));
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
    return fail(mismatch(node, key, "expected true or false"));
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
    return fail(mismatch(node, key, "expected a duration such as \"5s\""));
  }
  [[nodiscard]] Result<std::uint64_t> size(const toml::node& node, std::string_view key) const {
    if (const auto* value = node.as_integer()) {
      if (value->get() < 0) return fail(error(node, key, "must not be negative"));
      return static_cast<std::uint64_t>(value->get());
    }
    const auto text = string(node, key);
    if (!text) return fail(mismatch(node, key, "expected a size such as \"20GiB\""));
    auto parsed = parse_size(*text);
    if (!parsed) return fail(error(node, key, parsed.error().message));
    return *parsed;
  }
  /// A string or an array of strings.
  [[nodiscard]] Result<std::vector<std::string>> strings(const toml::node& node,
                                                         std::string_view key) const {
    if (const auto* value = node.as_string()) return std::vector<std::string>{value->get()};
    const auto* array = node.as_array();
    if (array == nullptr) {
      return fail(mismatch(node, key, "expected a string or a list of strings"));
    }
    std::vector<std::string> values;
    for (const toml::node& item : *array) {
      auto text = string(item, key);
      if (!text) return fail(text.error());
      values.push_back(*text);
    }
    return values;
  }

 private:
  /// A value of the wrong type: the file's "expected a number", a flag's CLI11 words.
  [[nodiscard]] Error mismatch(const toml::node& node, std::string_view key,
                               std::string_view expected) const {
    if (!flag_) return error(node, key, expected);
    const auto* text = node.as_string();
    return Error::invalid(
        fmt::format("Could not convert: {} = {}", source_, text ? text->get() : std::string()));
  }

  const std::string& source_;  ///< the file, or the flag
  std::map<std::string, Origin, std::less<>>& origins_;
  bool flag_ = false;
};

/// One value of the file or a flag, for the key it sets.
struct Value {
  const Reader& reader;
  const toml::node& node;
  std::string_view key;  ///< as the file names it ("warn_percent")

  [[nodiscard]] auto duration() const { return reader.duration(node, key); }
  [[nodiscard]] auto number() const { return reader.number(node, key); }
  [[nodiscard]] auto percent() const { return reader.percent(node, key); }
  [[nodiscard]] auto size() const { return reader.size(node, key); }
  [[nodiscard]] auto string() const { return reader.string(node, key); }
  [[nodiscard]] auto strings() const { return reader.strings(node, key); }
  [[nodiscard]] auto boolean() const { return reader.boolean(node, key); }
};

/// Sets one key from its value.
using Setter = Result<void> (*)(const Value&, DaemonConfig&);

/// A function that stores a value read from the file into `target`, converted to its type
/// (milliseconds to whole seconds, a size to a count, a list of strings to paths).
template <typename Target>
auto into(Target& target) {
  return [&target](auto value) {
    using Read = decltype(value);
    if constexpr (std::is_same_v<Read, std::chrono::milliseconds>) {
      target = std::chrono::duration_cast<Target>(value);
    } else if constexpr (std::is_same_v<Read, std::vector<std::string>>) {
      target.assign(value.begin(), value.end());
    } else if constexpr (std::is_arithmetic_v<Read> && std::is_arithmetic_v<Target>) {
      target = static_cast<Target>(value);
    } else {
      target = std::move(value);
    }
  };
}

template <typename Target>
auto into(std::optional<Target>& target) {
  return [&target](auto value) { into(target.emplace())(std::move(value)); };
}

/// Every key of the file but the sinks, by its full name (docs/watch.md). Flags set the
/// same keys through the same setters (kFlags).
constexpr std::pair<std::string_view, Setter> kKeys[] = {
    {"interval",
     [](const Value& v, DaemonConfig& c) { return v.duration().map(into(c.interval)); }},
    {"window",
     [](const Value& v, DaemonConfig& c) { return v.duration().map(into(c.watch.window)); }},
    {"listen", [](const Value& v, DaemonConfig& c) { return v.string().map(into(c.listen)); }},
    {"host", [](const Value& v, DaemonConfig& c) { return v.string().map(into(c.host)); }},
    {"dirs",
     [](const Value& v, DaemonConfig& c) { return v.strings().map(into(c.watch.sample.dirs)); }},
    {"mounts",
     [](const Value& v, DaemonConfig& c) { return v.strings().map(into(c.watch.sample.mounts)); }},
    {"state_file",
     [](const Value& v, DaemonConfig& c) { return v.string().map(into(c.state_file)); }},
    {"pid_file", [](const Value& v, DaemonConfig& c) { return v.string().map(into(c.pid_file)); }},
    {"probe_timeout",
     [](const Value& v, DaemonConfig& c) {
       return v.duration().map(into(c.watch.sample.probe_timeout));
     }},
    {"temp_dir", [](const Value& v,
                    DaemonConfig& c) { return v.boolean().map(into(c.watch.sample.temp_dir)); }},
    {"shm",
     [](const Value& v, DaemonConfig& c) { return v.boolean().map(into(c.watch.sample.shm)); }},
    {"shm_stale", [](const Value& v,
                     DaemonConfig& c) { return v.boolean().map(into(c.watch.sample.shm_stale)); }},
    {"alerts.warn_percent",
     [](const Value& v, DaemonConfig& c) {
       return v.percent().map(into(c.watch.alerts.warn_percent));
     }},
    {"alerts.critical_percent",
     [](const Value& v, DaemonConfig& c) {
       return v.percent().map(into(c.watch.alerts.critical_percent));
     }},
    {"alerts.clear_margin_percent",
     [](const Value& v, DaemonConfig& c) {
       return v.percent().map(into(c.watch.alerts.usage_clear_margin));
     }},
    {"alerts.memory_eta_below_percent",
     [](const Value& v, DaemonConfig& c) {
       return v.percent().map(into(c.watch.alerts.memory_eta_below_percent));
     }},
    {"alerts.psi_full_percent",
     [](const Value& v, DaemonConfig& c) {
       return v.percent().map(into(c.watch.alerts.psi_full_threshold));
     }},
    {"alerts.eta_horizon",
     [](const Value& v, DaemonConfig& c) {
       return v.duration().map(into(c.watch.alerts.eta_horizon));
     }},
    {"alerts.eta_min_span",
     [](const Value& v, DaemonConfig& c) {
       return v.duration().map(into(c.watch.alerts.eta_min_span));
     }},
    {"alerts.psi_for",
     [](const Value& v, DaemonConfig& c) {
       return v.duration().map(into(c.watch.alerts.psi_for));
     }},
    {"alerts.oom_quiet",
     [](const Value& v, DaemonConfig& c) {
       return v.duration().map(into(c.watch.alerts.oom_quiet));
     }},
    {"alerts.repeat_interval",
     [](const Value& v, DaemonConfig& c) {
       return v.duration().map(into(c.watch.alerts.repeat_interval));
     }},
    {"alerts.eta_clear_factor",
     [](const Value& v, DaemonConfig& c) {
       return v.number().map(into(c.watch.alerts.eta_clear_factor));
     }},
    {"alerts.clear_samples",
     [](const Value& v, DaemonConfig& c) {
       return v.number().map(into(c.watch.alerts.clear_samples));
     }},
    {"alerts.oom_scope",
     [](const Value& v, DaemonConfig& c) {
       return v.string().and_then([&](const std::string& text) -> Result<void> {
         auto scope = parse_oom_scope(text);
         if (!scope) return fail(v.reader.error(v.node, v.key, scope.error().message));
         c.watch.alerts.oom_scope = *scope;
         return {};
       });
     }},
    {"alerts.ckpt_size",
     [](const Value& v, DaemonConfig& c) {
       return v.size().map(into(c.watch.alerts.checkpoint_bytes));
     }},
    {"alerts.keep",
     [](const Value& v, DaemonConfig& c) { return v.size().map(into(c.watch.alerts.keep)); }},
    {"delivery.timeout",
     [](const Value& v, DaemonConfig& c) { return v.duration().map(into(c.delivery.timeout)); }},
    {"delivery.backoff",
     [](const Value& v, DaemonConfig& c) { return v.duration().map(into(c.delivery.backoff)); }},
    {"delivery.retries",
     [](const Value& v, DaemonConfig& c) { return v.size().map(into(c.delivery.retries)); }},
    {"delivery.queue",
     [](const Value& v, DaemonConfig& c) { return v.size().map(into(c.delivery.queue_capacity)); }},
};

const Setter* find_key(std::string_view key) {
  for (const auto& [name, setter] : kKeys) {
    if (name == key) return &setter;
  }
  return nullptr;
}

constexpr std::pair<std::string_view, SinkKind> kSinkKinds[] = {
    {"jsonl", SinkKind::kJsonl},  {"webhook", SinkKind::kWebhook}, {"slack", SinkKind::kSlack},
    {"wecom", SinkKind::kWecom},  {"feishu", SinkKind::kFeishu},   {"exec", SinkKind::kExec},
    {"signal", SinkKind::kSignal}};

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

/// `key` of [sinks] ("webhook", "stderr"): one target or a list, each on its own line.
Result<void> apply_sink(const Reader& reader, const toml::node& node, std::string_view key,
                        DaemonConfig& config) {
  if (key == "stderr") {
    auto enabled = reader.boolean(node, key);
    if (!enabled) return fail(enabled.error());
    config.stderr_alerts = *enabled;
    reader.record("sinks.stderr", node);
    return {};
  }
  const auto* kind = std::find_if(std::begin(kSinkKinds), std::end(kSinkKinds),
                                  [&](const auto& entry) { return entry.first == key; });
  if (kind == std::end(kSinkKinds)) return fail(reader.error(node, key, "unknown sink in [sinks]"));
  if (node.is_string()) return add_sink(reader, node, key, kind->second, config);
  // Each target of a list on its own line: an error points at the one that is wrong.
  const auto* targets = node.as_array();
  if (targets == nullptr) {
    return fail(reader.error(node, key, "expected a string or a list of strings"));
  }
  for (const toml::node& target : *targets) {
    if (auto added = add_sink(reader, target, key, kind->second, config); !added) return added;
  }
  return {};
}

/// The keys of `table`, whose full names start with `prefix` ("alerts." or empty).
Result<void> apply_table(const Reader& reader, const toml::table& table, std::string_view prefix,
                         DaemonConfig& config) {
  for (const auto& [raw_key, node] : table) {
    const std::string_view key = raw_key.str();
    const std::string name = fmt::format("{}{}", prefix, key);
    if (prefix.empty() && (key == "alerts" || key == "sinks" || key == "delivery")) {
      const auto* inner = node.as_table();
      if (inner == nullptr) return fail(reader.error(node, key, "expected a table"));
      Result<void> applied;
      if (key == "sinks") {
        for (const auto& [sink_key, sink_node] : *inner) {
          applied = apply_sink(reader, sink_node, sink_key.str(), config);
          if (!applied) return applied;
        }
      } else {
        applied = apply_table(reader, *inner, fmt::format("{}.", key), config);
      }
      if (!applied) return applied;
      continue;
    }
    const Setter* setter = find_key(name);
    if (setter == nullptr) {
      return fail(reader.error(node, key,
                               prefix.empty() ? std::string("unknown key")
                                              : fmt::format("unknown key in [{}]",
                                                            prefix.substr(0, prefix.size() - 1))));
    }
    if (auto applied = (*setter)(Value{reader, node, key}, config); !applied) return applied;
    reader.record(name, node);
  }
  return {};
}

/// A watch flag and the key it sets. A switch (--no-stderr) sets its key to `value`; a
/// repeatable flag (--dir) sets a list key to all its values, or adds a sink per value.
struct FlagKey {
  std::string_view flag;
  std::string_view key;
  std::optional<bool> value = std::nullopt;  ///< a switch's value
  std::string_view if_empty = {};            ///< what a flag given without a value means
};

constexpr FlagKey kFlags[] = {
    {"--interval", "interval"},
    {"--window", "window"},
    {"--dir", "dirs"},
    {"--mount", "mounts"},
    {"--listen", "listen", std::nullopt, kDefaultListen},
    {"--ckpt-size", "alerts.ckpt_size"},
    {"--keep", "alerts.keep"},
    {"--warn-percent", "alerts.warn_percent"},
    {"--critical-percent", "alerts.critical_percent"},
    {"--eta-horizon", "alerts.eta_horizon"},
    {"--repeat", "alerts.repeat_interval"},
    {"--psi-threshold", "alerts.psi_full_percent"},
    {"--psi-for", "alerts.psi_for"},
    {"--oom-scope", "alerts.oom_scope"},
    {"--clear-samples", "alerts.clear_samples"},
    {"--webhook", "sinks.webhook"},
    {"--slack", "sinks.slack"},
    {"--wecom", "sinks.wecom"},
    {"--feishu", "sinks.feishu"},
    {"--exec", "sinks.exec"},
    {"--signal", "sinks.signal"},
    {"--jsonl", "sinks.jsonl"},
    {"--no-stderr", "sinks.stderr", false},
    {"--no-shm-stale", "shm_stale", false},
    {"--webhook-timeout", "delivery.timeout"},
    {"--webhook-retries", "delivery.retries"},
    {"--queue", "delivery.queue"},
    {"--host", "host"},
    {"--state", "state_file"},
    {"--pid-file", "pid_file"},
};

/// Applies one flag given on the command line with `values` (a later value wins).
Result<void> apply_flag(const FlagKey& spec, const std::vector<std::string>& values,
                        DaemonConfig& config) {
  const std::string flag(spec.flag);
  const Reader reader = Reader::of_flag(flag, config.origins);
  if (spec.key.starts_with("sinks.")) {
    const std::string_view kind = spec.key.substr(std::string_view("sinks.").size());
    if (spec.value) return apply_sink(reader, toml::value<bool>(*spec.value), kind, config);
    for (const std::string& target : values) {
      if (auto added = apply_sink(reader, toml::value<std::string>(target), kind, config); !added) {
        return added;
      }
    }
    return {};
  }
  const Setter* setter = find_key(spec.key);
  if (setter == nullptr) return fail(Error::invalid(fmt::format("{}: no key {}", flag, spec.key)));
  const std::string_view leaf = spec.key.substr(spec.key.rfind('.') + 1);
  Result<void> applied;
  if (spec.value) {
    applied = (*setter)(Value{reader, toml::value<bool>(*spec.value), leaf}, config);
  } else if (spec.key == "dirs" || spec.key == "mounts") {
    toml::array list;
    for (const std::string& value : values) list.push_back(value);
    applied = (*setter)(Value{reader, list, leaf}, config);
  } else {
    std::string value = values.empty() ? std::string() : values.back();
    if (value.empty() && !spec.if_empty.empty()) value = spec.if_empty;
    applied = (*setter)(Value{reader, toml::value<std::string>(std::move(value)), leaf}, config);
  }
  if (!applied) return applied;
  config.origins[std::string(spec.key)] = Origin::of_flag(flag);
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
  if (auto applied = apply_table(Reader(source, updated.origins), root, "", updated); !applied) {
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

namespace headroom::daemon {

Result<DaemonConfig> load_config(const std::optional<std::filesystem::path>& file,
                                 const std::vector<FlagValues>& flags, bool host_root) {
  DaemonConfig config;
  config.watch.sample.dirs.clear();
  if (file) {
    // Checked below with the flags applied: a flag may mend what the file got wrong.
    if (auto applied = apply_toml_file(*file, config, Check::kLater); !applied) {
      return fail(applied.error());
    }
  }
  for (const FlagKey& spec : kFlags) {
    const auto given = std::find_if(flags.begin(), flags.end(),
                                    [&](const FlagValues& flag) { return flag.flag == spec.flag; });
    if (given == flags.end()) continue;
    if (auto applied = apply_flag(spec, given->values, config); !applied) {
      return fail(applied.error());
    }
  }
  // Under a host root (a node agent reading the host's /proc, e.g. the DaemonSet) its own
  // cgroup is its pod's, whatever limit it has: follow the host's OOM kills.
  if (host_root && config.watch.alerts.oom_scope == OomScope::kAuto) {
    config.watch.alerts.oom_scope = OomScope::kSystem;
  }
  if (auto valid = validate(config); !valid) return fail(valid.error());
  return config;
}

}  // namespace headroom::daemon
