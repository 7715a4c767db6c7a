// headroom._headroom.Watcher: the watch step (sample -> history -> predictions
// -> alert events, src/core/alerts/watcher.h) for the Python Monitor. Each step
// samples in C++ with the GIL released; results cross as the JSON documents of
// `headroom watch --json` (docs/json.md).

#include "core/alerts/watcher.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/alerts/render.h"
#include "core/live_context.h"
#include "core/text_out.h"
#include "python/errors.h"

namespace py = pybind11;

namespace headroom {

namespace {

/// Owns one Watcher. Not thread-safe, like Watcher: the Python Monitor calls it
/// from its own thread only.
class PyWatcher {
 public:
  PyWatcher(Context context, WatchOptions options)
      : watcher_(std::move(context), std::move(options)) {}

  /// One step; returns {"time", "filesystems", ..., "alerts": [events of this step]}.
  std::string step() {
    Result<WatchStep> step;
    {
      py::gil_scoped_release release;
      step = watcher_.step();
    }
    WatchStep done = unwrap(std::move(step));
    nlohmann::ordered_json json = to_json(done);
    // The events carry "stop" too, as active() does.
    if (json.contains("alerts")) {
      for (std::size_t i = 0; i < json["alerts"].size() && i < done.events.size(); ++i) {
        json["alerts"][i]["stop"] = stops(done.events[i]);
      }
    }
    return json_text(json);
  }

  /// The alerts firing now: [{"kind", "rule", "subject", "severity", ..., "stop"}], where
  /// "stop" says the loop should save and stop (blocks_next_checkpoint).
  std::string active() const {
    nlohmann::ordered_json alerts = nlohmann::ordered_json::array();
    for (const auto& [key, alert] : watcher_.engine().active()) {
      nlohmann::ordered_json json = to_json(alert.last);
      json["stop"] = blocks_next_checkpoint(alert.last, watcher_.engine().config());
      alerts.push_back(std::move(json));
    }
    return json_text(alerts);
  }

  /// Whether the event (one of step()'s) says the loop should save and stop.
  bool stops(const AlertEvent& event) const {
    return blocks_next_checkpoint(event, watcher_.engine().config());
  }

 private:
  Watcher watcher_;
};

std::chrono::seconds whole_seconds(double seconds) {
  return std::chrono::seconds(static_cast<std::int64_t>(seconds));
}

PyWatcher make_watcher(std::vector<std::filesystem::path> dirs,
                       std::map<std::string, std::string> environment,
                       std::filesystem::path working_directory, bool temp_dir, bool shm,
                       bool shm_stale, double warn_percent, double critical_percent,
                       double eta_horizon_seconds, std::optional<std::uint64_t> checkpoint_bytes,
                       std::uint64_t keep, int clear_samples, double repeat_interval_seconds,
                       double window_seconds) {
  WatchOptions options;
  options.sample.dirs = std::move(dirs);
  options.sample.temp_dir = temp_dir;
  options.sample.shm = shm;
  options.sample.shm_stale = shm_stale;
  options.window = std::chrono::milliseconds(static_cast<std::int64_t>(window_seconds * 1000));
  options.alerts.warn_percent = warn_percent;
  options.alerts.critical_percent = critical_percent;
  options.alerts.eta_horizon = whole_seconds(eta_horizon_seconds);
  options.alerts.checkpoint_bytes = checkpoint_bytes;
  options.alerts.keep = keep;
  options.alerts.clear_samples = clear_samples;
  options.alerts.repeat_interval = whole_seconds(repeat_interval_seconds);
  unwrap(validate(options.alerts));
  return PyWatcher(live_context(std::move(environment), std::move(working_directory)),
                   std::move(options));
}

}  // namespace

void bind_watcher(py::module_& module) {
  py::class_<PyWatcher>(module, "Watcher", "One watch loop's state: history and alert engine.")
      .def(py::init(&make_watcher), py::arg("dirs"), py::arg("environment"),
           py::arg("working_directory"), py::arg("temp_dir") = true, py::arg("shm") = true,
           py::arg("shm_stale") = false, py::arg("warn_percent") = 85.0,
           py::arg("critical_percent") = 95.0, py::arg("eta_horizon_seconds") = 3600.0,
           py::arg("checkpoint_bytes") = std::nullopt, py::arg("keep") = 1,
           py::arg("clear_samples") = 3, py::arg("repeat_interval_seconds") = 3600.0,
           py::arg("window_seconds") = 600.0)
      .def("step", &PyWatcher::step, "Samples now (GIL released); the step as JSON.")
      .def("active", &PyWatcher::active, "Alerts firing now, as a JSON array.");
}

}  // namespace headroom
