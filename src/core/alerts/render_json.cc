#include <fmt/format.h>

#include <ctime>

#include "core/alerts/render.h"

namespace headroom {

namespace {

using Json = nlohmann::ordered_json;

template <typename T>
Json optional_json(const std::optional<T>& value) {
  return value ? Json(*value) : Json(nullptr);
}

Json filesystem_json(const FilesystemSample& filesystem, const Predictions& predictions) {
  Json json = {
      {"path", filesystem.path}, {"role", to_string(filesystem.role)}, {"ok", filesystem.ok}};
  if (filesystem.expect_mount && filesystem.ok) json["is_mount"] = filesystem.is_mount;
  if (!filesystem.ok) {
    json["error"] = filesystem.why();
    if (filesystem.stuck) json["stuck"] = true;
    return json;
  }
  json["mountpoint"] = filesystem.mountpoint;
  json["device"] = filesystem.source;
  json["fstype"] = filesystem.fstype;
  json["size_bytes"] = filesystem.total_bytes;
  json["free_bytes"] = filesystem.free_bytes;
  json["avail_bytes"] = filesystem.avail_bytes;
  json["used_percent"] = filesystem.used_percent();
  json["inodes_total"] = filesystem.total_inodes;
  json["inodes_free"] = filesystem.avail_inodes;
  const FillEstimate* estimate = predictions.filesystem(filesystem.path);
  json["prediction"] = estimate != nullptr ? to_json(*estimate) : Json(nullptr);
  return json;
}

}  // namespace

std::string rfc3339(std::chrono::system_clock::time_point time) {
  const auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(time.time_since_epoch()).count();
  const std::time_t seconds = static_cast<std::time_t>(millis / 1000);
  std::tm utc{};
  ::gmtime_r(&seconds, &utc);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", utc.tm_year + 1900,
                     utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                     millis % 1000);
}

Json to_json(const FillEstimate& estimate) {
  return {{"fill_rate_bytes_per_second", optional_json(fill_rate(estimate))},
          {"eta_seconds", optional_json(estimate.eta_seconds)},
          {"samples", estimate.samples},
          {"span_seconds", estimate.span_seconds},
          {"agreement", estimate.agreement},
          {"recent", estimate.recent},
          {"stalled", estimate.stalled},
          {"restarted", estimate.restarted}};
}

Json to_json(const AlertEvent& event) {
  Json labels = Json::object();
  for (const auto& [name, value] : event.labels) labels[name] = value;
  Json json = {{"kind", to_string(event.kind)},     {"rule", event.rule},
               {"subject", event.subject},          {"severity", to_string(event.severity)},
               {"summary", event.summary},          {"value", event.value},
               {"threshold", event.threshold},      {"time", rfc3339(event.time)},
               {"started", rfc3339(event.started)}, {"labels", labels}};
  if (!event.host.empty()) json["host"] = event.host;
  if (!event.id.empty()) json["id"] = event.id;
  if (!event.action.empty()) json["action"] = event.action;
  return json;
}

Json to_json(const WatchStep& step) {
  const Sample& sample = step.sample;
  Json json;
  json["time"] = rfc3339(sample.time);
  json["filesystems"] = Json::array();
  for (const FilesystemSample& filesystem : sample.filesystems) {
    json["filesystems"].push_back(filesystem_json(filesystem, step.predictions));
  }
  if (sample.memory) {
    json["memory"] = {{"total_bytes", sample.memory->total_bytes},
                      {"available_bytes", sample.memory->available_bytes},
                      {"swap_total_bytes", sample.memory->swap_total_bytes},
                      {"swap_free_bytes", sample.memory->swap_free_bytes},
                      {"prediction", step.predictions.memory ? to_json(*step.predictions.memory)
                                                             : Json(nullptr)}};
  } else {
    json["memory"] = nullptr;
  }
  json["pressure"] = sample.pressure ? Json{{"some_avg10", sample.pressure->some_avg10},
                                            {"full_avg10", sample.pressure->full_avg10},
                                            {"full_total_us", sample.pressure->full_total_us}}
                                     : Json(nullptr);
  json["cgroup"] = sample.cgroup ? Json{{"path", sample.cgroup->path},
                                        {"limit_bytes", optional_json(sample.cgroup->limit_bytes)},
                                        {"usage_bytes", sample.cgroup->usage_bytes},
                                        {"oom_kills", sample.cgroup->oom_kills}}
                                 : Json(nullptr);
  json["system_oom_kills"] = optional_json(sample.system_oom_kills);
  json["fds"] = sample.fds ? Json{{"open", sample.fds->open},
                                  {"limit", sample.fds->limit},
                                  {"scope", sample.fds->system ? "system" : "process"}}
                           : Json(nullptr);
  json["shm_stale_bytes"] = optional_json(sample.shm_stale_bytes);
  json["shm_unknown_bytes"] = optional_json(sample.shm_unknown_bytes);
  json["probes"] = Json::array();
  for (const ProbeStatus& probe : sample.probes) {
    Json entry = {{"probe", probe.probe},
                  {"success", probe.success},
                  {"duration_seconds", probe.duration_seconds}};
    if (probe.error) entry["error"] = probe.error->message;
    json["probes"].push_back(entry);
  }
  json["alerts"] = Json::array();
  for (const AlertEvent& event : step.events) json["alerts"].push_back(to_json(event));
  return json;
}

}  // namespace headroom
