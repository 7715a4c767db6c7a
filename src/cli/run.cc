// headroom run: preflight, supervise the job, live warnings, and a post-mortem
// when it ends badly. Exit code: the job's (128+N for a signal); 125 when
// --strict refused to start it; 126/127 when the command could not be executed;
// 2 for usage errors. With --json, headroom's own lines give way to one JSON
// document, the last line of its stderr. Documented in docs/run.md.

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/check_options.h"
#include "cli/command.h"
#include "core/checks/check.h"
#include "core/postmortem/conclude_run.h"
#include "core/postmortem/postmortem.h"
#include "core/postmortem/render.h"
#include "core/report/json.h"
#include "core/safe_output.h"
#include "core/signal_names.h"
#include "core/supervise/sink_writer.h"
#include "core/supervise/supervisor.h"
#include "core/text_out.h"
#include "core/units.h"

namespace headroom::cli {

namespace {

constexpr int kExitRefused = 125;  // like docker run / env: the runner, not the job, failed
constexpr std::chrono::seconds kStableTrend{60};
constexpr double kMemoryEtaBelowPercent = 20.0;
// After the job ended, how long a reader of headroom's output may take nothing
// before the rest is given up (docs/run.md, "Output").
constexpr std::chrono::seconds kOutputStall{5};

// The job was not started (exit 125, 126 or 127): the reason on stderr, as a line
// or, with --json, as the run's document ({"started": false, ...}).
int not_started(const Globals& globals, int code, const std::string& message,
                const Report* preflight = nullptr) {
  if (!globals.json) {
    std::cerr << "headroom: " << message << "\n";
    return code;
  }
  nlohmann::ordered_json out;
  out["started"] = false;
  out["exit_code"] = code;
  out["error"] = message;
  out["preflight"] = preflight != nullptr ? findings_to_json(*preflight) : nullptr;
  std::cerr << json_text(out) << "\n";
  return code;
}

struct RunCommand {
  CheckFlags flags;
  std::string log;
  std::string log_size = "64MiB";
  unsigned log_keep = 3;
  bool strict = false;
  bool no_preflight = false;
  std::string on_critical;
  std::string report;
  std::string interval = "1s";
  std::string stall_after = "5m";
  std::vector<std::string> command;
};

// The preflight's problems on stderr (not with --json: they go in its document);
// true when one is critical.
bool preflight(const Context& context, const CheckOptions& options, const Globals& globals,
               Report& report) {
  report = run_checks(context, options);
  const TextStyle style{stderr_color(globals), globals.verbose};
  bool critical = false;
  for (const Finding& finding : report.findings) {
    if (finding.severity != Severity::kWarn && finding.severity != Severity::kCritical) continue;
    critical = critical || finding.severity == Severity::kCritical;
    if (!globals.json) std::cerr << "headroom: preflight: " << render_finding(finding, style);
  }
  return critical;
}

// Where --report goes: its directory is opened, and the name checked, before the
// job starts (a refused path should not cost a three-day run its report); the file
// is written only at the end, relative to that directory (core/safe_output.h).
struct ReportTarget {
  std::filesystem::path path;
  UniqueFd dir;
};

void write_report(const ReportTarget& target, const std::string& text, SinkWriter& err) {
  auto file = open_output_at(target.dir.get(), target.path.filename().string(),
                             ExistingFile::kTruncate, 0600, target.path);
  if (!file) {
    err.write("headroom: --report: " + file.error().message + "\n");
    return;
  }
  if (auto written = write_all(file->get(), text, target.path); !written) {
    err.write("headroom: --report " + written.error().message + "\n");
  }
}

int finish(const Context& context, const RunCommand& command, const Globals& globals,
           const CheckOptions& options, const SupervisionResult& run, const Catalog& catalog,
           const JobStart& started, const std::optional<ReportTarget>& report,
           const Report* preflight_report, SinkWriter& err) {
  if (!globals.json) err.write(render_output_notices(run, command.log));
  const Postmortem postmortem = conclude_run(context, run, options, started, catalog);
  if (globals.json) {
    err.write(run_to_json_line(postmortem, run, command.command, preflight_report));
  } else if (postmortem.stopped) {
    err.write(fmt::format("headroom: {}; exit {}\n", postmortem.summary, run.exit_code));
  } else if (postmortem.needed) {
    err.write(render_postmortem(postmortem, TextStyle{stderr_color(globals), globals.verbose}));
  }
  if (report && postmortem.needed) {
    write_report(*report, json_text(postmortem_to_json(postmortem, run, command.command), 2) + "\n",
                 err);
  }
  // headroom's stderr may be the stalled output: wait for it as for the job's output, no longer.
  (void)err.flush(kOutputStall);
  return run.exit_code;
}

}  // namespace

std::function<int()> setup_run(CLI::App& app, const Globals& globals) {
  auto command = std::make_shared<RunCommand>();
  add_check_flags(app, command->flags);
  // Repeatable flags take one value per use, so `--only shm -- sh -c ...` ends at `--`.
  for (const char* name : {"--dir", "--only"}) {
    if (CLI::Option* option = app.get_option_no_throw(name)) option->allow_extra_args(false);
  }
  app.add_option("--log", command->log, "also write the output to FILE (size-capped, rotated)");
  app.add_option("--log-size", command->log_size,
                 "size of one log file before rotating (default 64MiB)");
  app.add_option("--log-keep", command->log_keep, "log files kept: FILE, FILE.1, ... (default 3)");
  app.add_flag("--strict", command->strict,
               "refuse to start on a critical preflight finding (exit 125)");
  app.add_flag("--no-preflight", command->no_preflight,
               "start the job without the preflight checks (and their warnings)");
  app.add_option(
      "--on-critical", command->on_critical,
      "send this signal (e.g. SIGUSR1) to the job once when a --dir is about to fill up");
  app.add_option("--report", command->report,
                 "write the post-mortem as JSON to FILE (docs/json.md)");
  app.add_option("--interval", command->interval, "sampling interval (default 1s)");
  app.add_option("--stall-timeout,--stall-after", command->stall_after,
                 "no output for this long after an ENOSPC error is a stall (default 5m)");
  app.add_option("command", command->command, "the job: -- CMD ARGS...")->required();
  return [command, &globals]() {
    Context context = make_context(globals);
    auto options = to_check_options(command->flags, context.working_directory);
    if (!options) return usage_error(options.error().message);
    if (command->strict && command->no_preflight)
      return usage_error("--strict needs the preflight: drop --no-preflight or --strict");
    // The preflight's kernel.oom reports this job's history: kills of its user in
    // its memory cgroup, not other tenants' (docs/run.md).
    options->oom_job_uid = static_cast<std::int64_t>(::getuid());
    SupervisorOptions supervisor;
    auto interval = parse_duration(command->interval);
    auto stall = parse_duration(command->stall_after);
    auto log_size = parse_size(command->log_size);
    if (!interval || interval->count() <= 0)
      return usage_error("--interval: expected a duration such as 1s");
    if (!stall) return usage_error("--stall-timeout: " + stall.error().message);
    if (!log_size || *log_size == 0)
      return usage_error("--log-size: expected a size such as 64MiB");
    if (!command->on_critical.empty()) {
      auto signal = parse_signal(command->on_critical);
      if (!signal) return usage_error("--on-critical: " + signal.error().message);
      supervisor.on_critical_signal = *signal;
    }
    auto catalog = load_catalog({});
    if (!catalog) return usage_error("signature catalog: " + catalog.error().message);
    // --log and --report are opened (or checked) before anything runs: a path
    // refused by the rules of core/safe_output.h stops here, exit 125.
    if (!command->log.empty()) {
      auto log = RotatingLog::open({command->log, *log_size, command->log_keep});
      if (!log) return not_started(globals, kExitRefused, "--log: " + log.error().message);
      supervisor.log = std::move(*log);
    }
    std::optional<ReportTarget> report_target;
    if (!command->report.empty()) {
      const std::filesystem::path path = command->report;
      auto dir = open_output_dir(path.parent_path());
      if (!dir) return not_started(globals, kExitRefused, "--report: " + dir.error().message);
      if (auto checked = check_output_at(dir->get(), path.filename().string(), path); !checked)
        return not_started(globals, kExitRefused, "--report: " + checked.error().message);
      report_target = ReportTarget{path, std::move(*dir)};
    }

    Report report;
    if (!command->no_preflight && preflight(context, *options, globals, report) &&
        command->strict) {
      return not_started(
          globals, kExitRefused,
          globals.json
              ? "--strict: not starting the job because of the critical preflight finding(s)"
              : "--strict: not starting the job because of the critical finding(s) above",
          &report);
    }
    const Report* preflight_report = command->no_preflight ? nullptr : &report;

    supervisor.spawn.argv = command->command;
    supervisor.spawn.stdout_terminal = ::isatty(STDOUT_FILENO) == 1;
    supervisor.spawn.stderr_terminal = ::isatty(STDERR_FILENO) == 1;
    supervisor.spawn.terminal_fd = supervisor.spawn.stdout_terminal   ? STDOUT_FILENO
                                   : supervisor.spawn.stderr_terminal ? STDERR_FILENO
                                                                      : -1;
    supervisor.spawn.hand_over_foreground =
        ::isatty(STDIN_FILENO) == 1 && ::tcgetpgrp(STDIN_FILENO) == ::getpgrp() &&
        !supervisor.spawn.stdout_terminal && !supervisor.spawn.stderr_terminal;
    supervisor.interval = *interval;
    supervisor.stall_after = *stall;
    supervisor.watch.sample.dirs = options->dirs;
    supervisor.watch.sample.shm_stale = false;  // the preflight looked; too costly every tick
    supervisor.watch.alerts.warn_percent = options->warn_percent;
    supervisor.watch.alerts.critical_percent = options->critical_percent;
    supervisor.watch.alerts.checkpoint_bytes = options->checkpoint_bytes;
    supervisor.watch.alerts.keep = options->keep;
    // Live warnings only for trends that matter to this job: a time-to-full
    // seen for at least a minute, and for memory only once MemAvailable is low
    // (a job allocating at start-up on a roomy host is not running out).
    supervisor.watch.alerts.eta_min_span = kStableTrend;
    supervisor.watch.alerts.memory_eta_below_percent = kMemoryEtaBelowPercent;

    // headroom's own messages go through the same writer as the job's stderr:
    // a stalled reader of stderr never blocks the sampler that prints them.
    const auto made = make_output_writers(STDOUT_FILENO, STDERR_FILENO);
    if (!made) return not_started(globals, kExitRefused, made.error().message);
    const OutputWriters& writers = *made;
    supervisor.stdout_sink = writers.out;
    supervisor.stderr_sink = writers.err;
    supervisor.output_stall = kOutputStall;
    SupervisorHooks hooks;
    // With --json they are in the document at the end (alerts, stalled) instead.
    hooks.on_alert = [err = writers.err, &globals](const AlertEvent& event) {
      if (event.kind == AlertKind::kResolved || globals.json) return;
      err->write(fmt::format("headroom: {}: {}\n", to_string(event.severity), event.summary));
    };
    hooks.on_notice = [err = writers.err, &globals](const std::string& notice) {
      if (!globals.json) err->write("headroom: " + notice + "\n");
    };

    const JobStart started = mark_job_start(context);
    auto run = supervise(context, supervisor, hooks);
    if (!run) {
      const int code = run.error().code == Error::Code::kNotFound           ? 127
                       : run.error().code == Error::Code::kPermissionDenied ? 126
                                                                            : kExitUsage;
      return not_started(globals, code,
                         "cannot run " + command->command.front() + ": " + run.error().message,
                         preflight_report);
    }
    return finish(context, *command, globals, *options, *run, *catalog, started, report_target,
                  preflight_report, *writers.err);
  };
}

}  // namespace headroom::cli
