#include "daemon/alert_state.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>

#include "core/alerts/render.h"
#include "core/safe_output.h"
#include "core/sys_root.h"
#include "core/text_out.h"
#include "core/unique_fd.h"

namespace headroom::daemon {

namespace {

using Json = nlohmann::ordered_json;

/// The inverse of rfc3339(): "2024-05-01T12:00:00.250Z".
Result<std::chrono::system_clock::time_point> parse_time(const std::string& text) {
  std::tm utc{};
  int millis = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d.%3dZ", &utc.tm_year, &utc.tm_mon,
                  &utc.tm_mday, &utc.tm_hour, &utc.tm_min, &utc.tm_sec, &millis) != 7) {
    return fail(Error{Error::Code::kParse, fmt::format("'{}' is not an RFC 3339 time", text)});
  }
  utc.tm_year -= 1900;
  utc.tm_mon -= 1;
  return std::chrono::system_clock::from_time_t(::timegm(&utc)) + std::chrono::milliseconds(millis);
}

Result<Severity> parse_severity(const std::string& text) {
  for (Severity severity :
       {Severity::kOk, Severity::kUnknown, Severity::kWarn, Severity::kCritical}) {
    if (text == to_string(severity)) return severity;
  }
  return fail(Error{Error::Code::kParse, fmt::format("'{}' is not a severity", text)});
}

Result<ActiveAlert> alert_from_json(const Json& json) {
  ActiveAlert alert;
  AlertEvent& event = alert.last;
  try {
    event.kind = AlertKind::kFiring;
    event.rule = json.at("rule").get<std::string>();
    event.subject = json.at("subject").get<std::string>();
    auto severity = parse_severity(json.at("severity").get<std::string>());
    if (!severity) return fail(severity.error());
    event.severity = *severity;
    event.summary = json.at("summary").get<std::string>();
    event.value = json.at("value").get<double>();
    event.threshold = json.at("threshold").get<double>();
    for (const auto& [name, value] : json.at("labels").items()) {
      event.labels[name] = value.get<std::string>();
    }
    event.action = json.value("action", "");
    for (auto [field, time] : {std::pair{"time", &event.time}, std::pair{"started", &event.started},
                               std::pair{"last_sent", &alert.last_sent}}) {
      auto parsed = parse_time(json.at(field).get<std::string>());
      if (!parsed) return fail(parsed.error());
      *time = *parsed;
    }
  } catch (const Json::exception& error) {
    return fail(Error{Error::Code::kParse, error.what()});
  }
  return alert;
}

}  // namespace

Result<void> save_alert_state(const std::filesystem::path& path,
                              const std::map<std::string, ActiveAlert>& active) {
  Json alerts = Json::array();
  for (const auto& [key, alert] : active) {
    Json json = to_json(alert.last);
    json["last_sent"] = rfc3339(alert.last_sent);
    alerts.push_back(std::move(json));
  }
  const std::string text = json_text(Json{{"version", 1}, {"alerts", std::move(alerts)}}, 1) + "\n";
  std::filesystem::path temporary = path;
  temporary += ".tmp";
  ::unlink(temporary.c_str());  // a leftover, or a link someone planted: never written through
  const UniqueFd fd(
      ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd.ok()) return fail(Error::from_errno(errno, temporary.string()));
  if (auto written = write_all(fd.get(), text, temporary); !written) {
    ::unlink(temporary.c_str());
    return fail(written.error());
  }
  if (::fsync(fd.get()) != 0 || ::rename(temporary.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    ::unlink(temporary.c_str());
    return fail(Error::from_errno(saved, path.string()));
  }
  return {};
}

Result<std::map<std::string, ActiveAlert>> load_alert_state(const std::filesystem::path& path) {
  std::map<std::string, ActiveAlert> active;
  const SysRoot host("/");
  auto text = host.read(path, std::size_t{4} << 20);
  if (!text) {
    if (text.error().code == Error::Code::kNotFound) return active;
    return fail(text.error());
  }
  const Json json = Json::parse(*text, nullptr, false);
  if (json.is_discarded() || !json.contains("alerts") || !json["alerts"].is_array()) {
    return fail(Error{Error::Code::kParse,
                      fmt::format("{}: not a headroom alert state file", path.string())});
  }
  for (const Json& entry : json["alerts"]) {
    auto alert = alert_from_json(entry);
    if (!alert) {
      return fail(
          Error{Error::Code::kParse, fmt::format("{}: {}", path.string(), alert.error().message)});
    }
    active.emplace(alert->last.key(), std::move(*alert));
  }
  return active;
}

}  // namespace headroom::daemon
