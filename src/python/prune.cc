// headroom._headroom.plan_series / Plan: the retention planner of `headroom prune`
// (src/core/prune/) for headroom.save_checkpoint, so both decide series, steps,
// completeness and what retention removes in one place. Plans and outcomes cross
// as JSON: the document of `headroom prune --json` (docs/json.md).

#include "core/prune/prune.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <chrono>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/live_context.h"
#include "core/prune/render.h"
#include "core/series/capacity.h"
#include "core/series/series_space.h"
#include "core/text_out.h"
#include "python/errors.h"

namespace py = pybind11;

namespace headroom {

namespace {

/// One plan of one directory; removes only what it planned, re-checking each entry first.
class PyPlan {
 public:
  PyPlan(Context context, PruneResult result)
      : context_(std::move(context)), result_(std::move(result)) {}

  /// The plan as the JSON document of `headroom prune --json`.
  std::string json() const { return json_text(prune_to_json(result_)); }

  /// Removes the planned deletions named in `names` (all of them when empty); returns
  /// [{"name", "outcome", "reason", "freed_bytes"}] as JSON.
  std::string remove(const std::vector<std::string>& names) {
    std::vector<std::size_t> doomed;
    for (const PlannedCheckpoint& item : result_.plan.items) {
      if (item.decision != Decision::kDelete) continue;
      const std::string& name = result_.scan.checkpoints[item.index].name;
      if (names.empty() || std::find(names.begin(), names.end(), name) != names.end()) {
        doomed.push_back(item.index);
      }
    }
    Result<std::vector<RemovalOutcome>> outcomes;
    {
      py::gil_scoped_release release;
      outcomes = remove_checkpoints(context_, result_.scan, doomed, HolderRecheck::kScan);
    }
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const RemovalOutcome& outcome : unwrap(std::move(outcomes))) {
      out.push_back({{"name", result_.scan.checkpoints[outcome.index].name},
                     {"outcome", outcome.status == RemovalStatus::kRemoved   ? "removed"
                                 : outcome.status == RemovalStatus::kSkipped ? "skipped"
                                                                             : "failed"},
                     {"reason", outcome.reason},
                     {"freed_bytes", outcome.freed_bytes}});
    }
    return json_text(out);
  }

  /// The capacity rule (core/series/capacity.h) for the plan's first series.
  /// `reclaimable`: count the temps of dead saves as room (false once they are removed).
  std::string capacity(std::uint64_t avail_bytes, std::uint64_t checkpoint_bytes, std::size_t keep,
                       bool reclaimable) const {
    SeriesOnDisk series;
    if (!result_.plan.series.empty()) {
      series = series_on_disk(result_.scan, result_.plan, 0);
    } else {
      for (const PlannedCheckpoint& item : result_.plan.items) {
        if (item.decision == Decision::kDelete)
          series.reclaimable_bytes += result_.scan.checkpoints[item.index].tally.disk_bytes;
      }
    }
    if (!reclaimable) series.reclaimable_bytes = 0;
    // The saver asks before it writes: another run's save in progress is no room for its own.
    series.saving_bytes = 0;
    const CapacityInput input{avail_bytes, checkpoint_bytes, keep, std::move(series)};
    const Capacity capacity = plan_capacity(input);
    nlohmann::ordered_json out = {
        {"saves", capacity.saves ? nlohmann::ordered_json(*capacity.saves) : nullptr},
        {"frees_first", capacity.frees_first},
        {"room_bytes", capacity.room_bytes},
        {"need_bytes", capacity.need_bytes},
        {"severity", to_string(capacity.severity())},
        {"summary", capacity_summary(result_.scan.dir.string(), input, capacity)},
    };
    return json_text(out);
  }

 private:
  Context context_;
  PruneResult result_;
};

PyPlan plan_series(std::filesystem::path dir, std::size_t keep_last, std::string series,
                   std::string glob, std::string just_saved, double settle_seconds, bool in_use) {
  PruneOptions options;
  options.policy.just_saved = std::move(just_saved);
  options.dir = std::move(dir);
  options.policy.keep_last = keep_last;
  options.policy.one_series = glob;
  options.settle = std::chrono::milliseconds(static_cast<std::int64_t>(settle_seconds * 1000));
  options.in_use = in_use;
  options.series = std::move(series);
  options.glob = std::move(glob);
  Context context = live_context({}, options.dir);
  Result<PruneResult> result;
  {
    py::gil_scoped_release release;
    result = run_prune(context, options);
  }
  return PyPlan(std::move(context), unwrap(std::move(result)));
}

}  // namespace

void bind_prune(py::module_& module) {
  py::class_<PyPlan>(module, "Plan", "A retention plan of one directory (headroom prune's).")
      .def("json", &PyPlan::json, "The plan as the JSON of `headroom prune --json`.")
      .def("remove", &PyPlan::remove, py::arg("names"),
           "Removes the planned deletions named (all when empty), re-checking each; JSON outcomes.")
      .def("capacity", &PyPlan::capacity, py::arg("avail_bytes"), py::arg("checkpoint_bytes"),
           py::arg("keep"), py::arg("reclaimable") = true,
           "The capacity rule for the plan's series, as JSON.");
  module.def("plan_series", &plan_series, py::arg("dir"), py::arg("keep_last"),
             py::arg("series") = "", py::arg("glob") = "", py::arg("just_saved") = "",
             py::arg("settle_seconds") = 0.0, py::arg("in_use") = true,
             "Plans retention of one series (a template) or glob in `dir` (GIL released).");
  module.def(
      "series_template",
      [](const std::string& name, bool directory) { return series_template(name, directory); },
      py::arg("name"), py::arg("directory") = false,
      "The series a name belongs to: 'step_000100.pt' -> 'step_{N}.pt'.");
}

}  // namespace headroom
