// headroom run: preflight, supervise the job, live warnings, and a post-mortem
// when it ends badly. Exit code: the job's (128+N for a signal); 125 when
// --strict refused to start it; 126/127 when the command could not be executed;
// 2 for usage errors. Documented in docs/run.md.

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <memory>

#include "cli/check_options.h"
#include "cli/command.h"
#include "core/checks/check.h"
#include "core/explain/host.h"
#include "core/postmortem/postmortem.h"
#include "core/postmortem/render.h"
#include "core/probes/kmsg.h"
#include "core/signatures/analyzer.h"
#include "core/supervise/signal_names.h"
#include "core/supervise/supervisor.h"
#include "core/units.h"

namespace headroom::cli {

namespace {

constexpr int kExitRefused = 125;  // like docker run / env: the runner, not the job, failed
constexpr std::chrono::seconds kStableTrend{60};
constexpr double kMemoryEtaBelowPercent = 20.0;

struct RunCommand {
  CheckFlags flags;
  std::string log;
  std::string log_size = "64MiB";
  unsigned log_keep = 3;
  bool strict = false;
  std::string on_critical;
  std::string report;
  std::string interval = "1s";
  std::string stall_after = "5m";
  std::vector<std::string> command;
};

// The preflight's problems on stderr; true when one is critical.
bool preflight(const Context& context, const CheckOptions& options, const Globals& globals,
               Report& report) {
  report = run_checks(context, options);
  const TextStyle style{stderr_color(globals), globals.verbose};
  bool critical = false;
  for (const Finding& finding : report.findings) {
    if (finding.severity != Severity::kWarn && finding.severity != Severity::kCritical) continue;
    critical = critical || finding.severity == Severity::kCritical;
    std::cerr << "headroom: preflight: " << render_finding(finding, style);
  }
  return critical;
}

const CgroupSample* job_cgroup(const SupervisionResult& run, bool first) {
  const auto& samples = run.timeline.samples();
  const CgroupSample* found = nullptr;
  for (const JobSample& sample : samples) {
    // A sample taken as the job exits can see the root cgroup of a dead pid.
    if (sample.host && sample.host->cgroup &&
        (sample.host->cgroup->path != "/" || sample.host->cgroup->limit_bytes ||
         found == nullptr)) {
      found = &*sample.host->cgroup;
      if (first) return found;
    }
  }
  return found;
}

PostmortemInput gather(const Context& context, const SupervisionResult& run,
                       const CheckOptions& options, std::chrono::system_clock::time_point started) {
  PostmortemInput input;
  input.run = &run;
  if (const CgroupSample* first = job_cgroup(run, true))
    input.cgroup_oom_kills_before = first->oom_kills;
  if (const CgroupSample* last = job_cgroup(run, false)) {
    input.cgroup_path = last->path;
    input.cgroup_limit_bytes = last->limit_bytes;
    input.cgroup_oom_kills_after = last->oom_kills;
    // The counter moves when a worker is killed, often after the last tick: a
    // sample taken after the end counts only if headroom shares the job's cgroup.
    if (run.final_host && run.final_host->cgroup && run.final_host->cgroup->path == last->path) {
      input.cgroup_oom_kills_after = run.final_host->cgroup->oom_kills;
    }
  } else {
    input.could_not_see.push_back("the job's memory cgroup (no cgroup sample)");
  }
  auto kernel_log = read_kmsg(context);
  if (kernel_log) {
    // The oldest record still in the ring buffer must predate the job, or kills were lost.
    input.kernel_log_covers_job =
        kernel_log->boot_time.has_value() &&
        (kernel_log->records.empty() ||
         *kernel_log->boot_time + std::chrono::duration_cast<std::chrono::system_clock::duration>(
                                      kernel_log->records.front().since_boot) <=
             started);
    for (OomEvent& event : parse_oom_events(kernel_log->records, kernel_log->boot_time)) {
      // Only kills during the job (a second of slack for the kernel clock).
      if (event.time && *event.time < started - std::chrono::seconds(1)) continue;
      input.oom_events.push_back(std::move(event));
    }
  } else {
    input.could_not_see.push_back("kernel log: " + kernel_log.error().message);
  }
  if (options.workers > 0 && options.batch_bytes)
    input.shm_need_bytes = dataloader_shm_need(options);
  for (const std::string& reason : run.unreadable) {
    // Probes of a pid that just exited fail too; only missing privileges are blind spots.
    if (reason.find("Permission denied") != std::string::npos ||
        reason.find("Operation not permitted") != std::string::npos) {
      input.could_not_see.push_back(reason);
    }
  }
  return input;
}

// The captured output for explain: the kept tail, without its first partial
// line when older output was dropped (line numbers then count from there).
std::string_view output_for_explain(const SupervisionResult& run) {
  std::string_view tail = run.output_tail;
  if (run.output_bytes > tail.size()) {
    const std::size_t newline = tail.find('\n');
    tail.remove_prefix(newline == std::string_view::npos ? tail.size() : newline + 1);
  }
  return tail;
}

int finish(const Context& context, const RunCommand& command, const Globals& globals,
           const CheckOptions& options, const SupervisionResult& run, const Catalog& catalog,
           std::chrono::system_clock::time_point started) {
  if (run.log && run.log->lost_bytes > 0) {
    std::cerr << fmt::format(
        "headroom: --log lost {} of output ({})\n", format_bytes(run.log->lost_bytes),
        run.log->last_error.empty() ? "the disk was too slow" : run.log->last_error);
  }
  PostmortemInput input = gather(context, run, options, started);
  // Whether the job ended badly does not depend on its output: decide that
  // first, and run explain (over the kept tail only) just for a job that did.
  Postmortem postmortem = build_postmortem(input);
  Diagnosis diagnosis;
  if (postmortem.needed) {
    LogAnalyzer analyzer(catalog);
    analyzer.feed(output_for_explain(run));
    analyzer.note_exit(WIFEXITED(run.wait_status) ? std::optional<int>(WEXITSTATUS(run.wait_status))
                                                  : std::nullopt,
                       WIFSIGNALED(run.wait_status) ? std::optional<int>(WTERMSIG(run.wait_status))
                                                    : std::nullopt);
    diagnosis = analyzer.finish();
    input.diagnosis = &diagnosis;
    postmortem = build_postmortem(input);
  }
  if (postmortem.needed && !postmortem.stopped) {
    // Confirm on the host (kernel log for the pids, /dev/shm, free space of the
    // named paths) and rebuild with the confirmed diagnosis and its remedies.
    const HostConfirmation host = confirm_on_host(context, diagnosis);
    apply_host(diagnosis, host);
    input.remedy = remedies_for(diagnosis, host.runtime);
    postmortem = build_postmortem(input);
  }
  if (postmortem.stopped) {
    std::cerr << "headroom: " << postmortem.summary << "; exit " << run.exit_code << "\n";
  } else if (postmortem.needed) {
    std::cerr << render_postmortem(postmortem, TextStyle{stderr_color(globals), globals.verbose});
  }
  if (!command.report.empty() && postmortem.needed) {
    std::ofstream file(command.report);
    file << postmortem_to_json(postmortem, run, command.command).dump(2) << "\n";
    if (!file) std::cerr << "headroom: --report " << command.report << ": could not write\n";
  }
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

    Report report;
    if (preflight(context, *options, globals, report) && command->strict) {
      std::cerr
          << "headroom: --strict: not starting the job because of the critical finding(s) above\n";
      return kExitRefused;
    }

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
    if (!command->log.empty()) {
      supervisor.log = RotatingLogOptions{command->log, *log_size, command->log_keep};
    }
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

    SupervisorHooks hooks;
    hooks.on_alert = [](const AlertEvent& event) {
      if (event.kind == AlertKind::kResolved) return;
      std::cerr << fmt::format("headroom: {}: {}\n", to_string(event.severity), event.summary);
    };
    hooks.on_notice = [](const std::string& notice) {
      std::cerr << "headroom: " << notice << "\n";
    };

    const auto started = std::chrono::system_clock::now();
    auto run = supervise(context, supervisor, hooks);
    if (!run) {
      std::cerr << "headroom: cannot run " << command->command.front() << ": "
                << run.error().message << "\n";
      if (run.error().code == Error::Code::kNotFound) return 127;
      if (run.error().code == Error::Code::kPermissionDenied) return 126;
      return static_cast<int>(kExitUsage);
    }
    return finish(context, *command, globals, *options, *run, *catalog, started);
  };
}

}  // namespace headroom::cli
