// headroom._headroom: the pybind11 shims over headroom_core. The Pythonic layer
// (Report, Finding, Monitor, save_checkpoint) lives in python/headroom/; this
// file only converts arguments, releases the GIL around core work, and turns a
// core Error into a Python exception in one place (raise_error).

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "core/checks/check.h"
#include "core/error.h"
#include "core/live_context.h"
#include "core/operand.h"
#include "core/report/json.h"
#include "core/text_out.h"
#include "core/units.h"
#include "python/errors.h"

namespace py = pybind11;

namespace headroom {

void bind_watcher(py::module_& module);
void bind_prune(py::module_& module);

/// The one place an Error becomes a Python exception: ValueError for bad input,
/// FileNotFoundError / PermissionError / OSError for the rest. Needs the GIL.
[[noreturn]] void raise_error(const Error& error) {
  PyObject* type = PyExc_OSError;
  switch (error.code) {
    case Error::Code::kInvalidArgument:
    case Error::Code::kParse:
      type = PyExc_ValueError;
      break;
    case Error::Code::kNotFound:
      type = PyExc_FileNotFoundError;
      break;
    case Error::Code::kPermissionDenied:
      type = PyExc_PermissionError;
      break;
    case Error::Code::kUnsupported:
      type = PyExc_NotImplementedError;
      break;
    case Error::Code::kIo:
      break;
  }
  PyErr_SetString(type, error.message.c_str());
  throw py::error_already_set();
}

namespace {

/// Runs the checks of `options` against the live host and returns the report as
/// the JSON document of docs/json.md, the same one `headroom check --json` prints.
std::string run_checks_json(const CheckOptions& options,
                            std::map<std::string, std::string> environment,
                            std::filesystem::path working_directory, std::filesystem::path root) {
  unwrap(validate(options));
  const Context context =
      live_context(std::move(environment), std::move(working_directory), std::move(root));
  py::gil_scoped_release release;
  return json_text(to_json(run_checks(context, options)));
}

/// The core's resolve_job_dirs as strings; its errors name the argument `dirs` and keep
/// Python's own classes (NotADirectoryError, FileNotFoundError, PermissionError).
std::vector<std::string> resolve_job_dirs_py(const std::vector<std::string>& dirs,
                                             const std::filesystem::path& working_directory) {
  auto resolved = resolve_job_dirs(dirs, working_directory);
  if (!resolved) {
    Error error = resolved.error();
    error.message = "dirs: " + error.message;
    if (error.code == Error::Code::kInvalidArgument) {
      PyErr_SetString(PyExc_NotADirectoryError, error.message.c_str());
      throw py::error_already_set();
    }
    raise_error(error);
  }
  std::vector<std::string> paths;
  for (const std::filesystem::path& path : *resolved) paths.push_back(path.string());
  return paths;
}

}  // namespace

}  // namespace headroom

PYBIND11_MODULE(_headroom, module) {
  using headroom::CheckOptions;
  module.doc() = "headroom core bindings; use the `headroom` package instead.";
  module.attr("__version__") = HEADROOM_VERSION;
  headroom::bind_watcher(module);
  headroom::bind_prune(module);

  py::class_<CheckOptions>(module, "CheckOptions", "The job shape the checks run against.")
      .def(py::init<>())
      .def(
          "validate", [](const CheckOptions& options) { unwrap(validate(options)); },
          "Raises ValueError naming the field when the options are out of range.")
      .def_readwrite("dirs", &CheckOptions::dirs)
      .def_readwrite("warn_percent", &CheckOptions::warn_percent)
      .def_readwrite("critical_percent", &CheckOptions::critical_percent)
      .def_readwrite("checkpoint_bytes", &CheckOptions::checkpoint_bytes)
      .def_readwrite("keep", &CheckOptions::keep)
      .def_readwrite("workers", &CheckOptions::workers)
      .def_readwrite("prefetch", &CheckOptions::prefetch)
      .def_readwrite("batch_bytes", &CheckOptions::batch_bytes)
      .def_readwrite("ranks", &CheckOptions::ranks)
      .def_readwrite("gpus", &CheckOptions::gpus)
      .def_readwrite("worker_rss", &CheckOptions::worker_rss)
      .def_readwrite("tensors_per_batch", &CheckOptions::tensors_per_batch)
      .def_readwrite("base_fds", &CheckOptions::base_fds)
      .def_readwrite("only", &CheckOptions::only);

  module.def("run_checks", &headroom::run_checks_json, py::arg("options"), py::arg("environment"),
             py::arg("working_directory"), py::arg("root") = "/",
             "Runs the checks (GIL released) and returns the report as a JSON string.");
  module.def("resolve_job_dirs", &headroom::resolve_job_dirs_py, py::arg("dirs"),
             py::arg("working_directory"),
             "The dirs a job writes to, absolute and checked; none given: the working directory.");
  module.def(
      "dataloader_shm_need",
      [](const CheckOptions& options) { return headroom::dataloader_shm_need(options); },
      py::arg("options"),
      "Upper bound of the /dev/shm bytes of the DataLoaders: ranks x ((workers x prefetch + "
      "2) x batch + semaphores).");
  module.def(
      "check_ids",
      [] {
        std::vector<std::string> ids;
        for (std::string_view id : headroom::finding_ids()) ids.emplace_back(id);
        return ids;
      },
      "Ids of the findings the checks yield, in the order they run.");
  module.def(
      "parse_size",
      [](const std::string& text) { return headroom::unwrap(headroom::parse_size(text)); },
      py::arg("text"),
      "Parses \"32MiB\", \"1.5G\", \"4096\" into bytes; ValueError when malformed.");
  module.def("format_bytes", &headroom::format_bytes, py::arg("bytes"),
             "Bytes for people: \"64.0 MiB\".");
}
