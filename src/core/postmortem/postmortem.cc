#include "core/postmortem/postmortem.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstring>

#include "core/postmortem/python_exception.h"
#include "core/postmortem/timeline_evidence.h"
#include "core/signatures/catalog.h"
#include "core/signatures/signals.h"
#include "core/units.h"

namespace headroom {

namespace {

bool was_forwarded(const SupervisionResult& run, int signal) {
  return std::any_of(run.forwarded.begin(), run.forwarded.end(),
                     [&](const ForwardedSignal& sent) { return sent.signal == signal; });
}

bool in_tree(const SupervisionResult& run, std::int64_t pid) {
  return run.processes.count(static_cast<pid_t>(pid)) != 0 || pid == run.main_pid ||
         std::any_of(run.exits.begin(), run.exits.end(),
                     [&](const ProcessExit& exit) { return exit.pid == pid; });
}

// The role of a pid: from the samples, else what the output says about it.
Culprit name_process(const PostmortemInput& input, pid_t pid) {
  const SupervisionResult& run = *input.run;
  Culprit culprit;
  culprit.pid = pid;
  const auto seen = run.processes.find(pid);
  if (seen != run.processes.end()) {
    culprit.role = describe_role(seen->second);
    culprit.role_id = std::string(role_id(seen->second.role));
    culprit.name = seen->second.name;
  } else if (pid == run.main_pid) {
    culprit.role = "main";
    culprit.role_id = "main";
  } else {
    culprit.role = "process";
    culprit.role_id = "other";
  }
  // What PyTorch itself calls it decides for a process the tree alone cannot place (a
  // spawn-context DataLoader's workers look like any multiprocessing child).
  if (culprit.role_id == "other" || culprit.role_id == "spawned") {
    if (input.diagnosis != nullptr) {
      const std::string marker = fmt::format("DataLoader worker (pid {})", pid);
      const std::string marker_list = fmt::format("pid(s) {}", pid);
      for (const EvidenceLine& line : input.diagnosis->evidence) {
        if (line.text.find(marker) != std::string::npos ||
            line.text.find(marker_list) != std::string::npos) {
          culprit.role = "DataLoader worker";
          culprit.role_id = "dataloader_worker";
        }
      }
    }
  }
  for (const ProcessExit& exit : run.exits) {
    if (exit.pid == pid) culprit.fate = describe_wait_status(exit.wait_status);
  }
  return culprit;
}

std::optional<pid_t> first_exit_with_signal(const SupervisionResult& run, int signal) {
  for (const ProcessExit& exit : run.exits) {
    if (WIFSIGNALED(exit.wait_status) && WTERMSIG(exit.wait_status) == signal) return exit.pid;
  }
  return std::nullopt;
}

// Something of the job died of SIGKILL: a process headroom reaped, or one its output
// reports ("DataLoader worker (pid N) is killed by signal: Killed", torchrun's "-9").
bool job_lost_a_process_to_sigkill(const PostmortemInput& input) {
  if (first_exit_with_signal(*input.run, SIGKILL)) return true;
  if (input.diagnosis == nullptr) return false;
  const auto& signals = input.diagnosis->fields.signals;
  return std::any_of(signals.begin(), signals.end(),
                     [](const std::string& text) { return signal_number(text) == SIGKILL; });
}

// The OOM kills (already limited to the run by the caller) that ended a process of
// this job: a pid of its tree, or one its output names as killed. A kill in the
// job's cgroup of a pid headroom never saw (a short-lived worker between two
// samples) counts only when something of the job did die of SIGKILL: the cgroup
// may be a whole container's, where another job's kill is not this one's.
std::vector<OomEvent> job_oom_events(const PostmortemInput& input) {
  std::vector<OomEvent> events;
  const bool lost_to_sigkill = job_lost_a_process_to_sigkill(input);
  for (const OomEvent& event : input.oom_events) {
    const bool same_cgroup = input.cgroup_path && !input.cgroup_path->empty() &&
                             *input.cgroup_path != "/" && event.task_cgroup == *input.cgroup_path;
    bool named = false;
    if (input.diagnosis != nullptr) {
      const auto& killed = input.diagnosis->fields.killed_pids;
      const auto& pids = input.diagnosis->fields.pids;
      named = std::find(killed.begin(), killed.end(), event.pid) != killed.end() ||
              std::find(pids.begin(), pids.end(), event.pid) != pids.end();
    }
    if (in_tree(*input.run, event.pid) || named || (same_cgroup && lost_to_sigkill)) {
      events.push_back(event);
    }
  }
  return events;
}

// The pid explain's evidence points at for this cause (a worker "killed by signal").
std::optional<pid_t> pid_from_output(const PostmortemInput& input, bool killed_first) {
  if (input.diagnosis == nullptr) return std::nullopt;
  const ExtractedFields& fields = input.diagnosis->fields;
  if (killed_first) {
    for (const std::int64_t pid : fields.killed_pids) {
      if (in_tree(*input.run, pid)) return static_cast<pid_t>(pid);
    }
  }
  for (const std::int64_t pid : fields.pids) return static_cast<pid_t>(pid);
  return std::nullopt;
}

void add_exits(const PostmortemInput& input, Postmortem& result) {
  for (const ProcessExit& exit : input.run->exits) {
    const Culprit named = name_process(input, exit.pid);
    const bool abnormal = WIFSIGNALED(exit.wait_status) ||
                          (WIFEXITED(exit.wait_status) && WEXITSTATUS(exit.wait_status) != 0);
    result.exits.push_back(
        {exit.pid, named.role, describe_wait_status(exit.wait_status), abnormal});
  }
}

/// The lowest host MemAvailable, its share of the total, and the highest memory PSI
/// ("full" avg10) and cgroup use of its limit over the run; nullopt without a memory sample.
struct MemoryLow {
  std::uint64_t available = 0;
  std::uint64_t total = 0;
  double psi_full = 0;
  double cgroup_percent = 0;
};

std::optional<MemoryLow> lowest_memory(const SupervisionResult& run) {
  std::optional<MemoryLow> low;
  for (const JobSample& sample : run.timeline.samples()) {
    if (!sample.host || !sample.host->memory || sample.host->memory->total_bytes == 0) continue;
    const MemorySample& memory = *sample.host->memory;
    if (!low) low = MemoryLow{};
    if (low->total == 0 || memory.available_bytes < low->available) {
      low->available = memory.available_bytes;
      low->total = memory.total_bytes;
    }
    if (sample.host->pressure)
      low->psi_full = std::max(low->psi_full, sample.host->pressure->full_avg10);
    if (sample.host->cgroup && sample.host->cgroup->limit_bytes &&
        *sample.host->cgroup->limit_bytes > 0) {
      low->cgroup_percent = std::max(low->cgroup_percent,
                                     100.0 * static_cast<double>(sample.host->cgroup->usage_bytes) /
                                         static_cast<double>(*sample.host->cgroup->limit_bytes));
    }
  }
  return low;
}

// The process of the job that `raised` names: torch.multiprocessing.spawn's "process N"
// (a child of main, else of any process), torchrun's "[rankN]:", else the main process.
pid_t raiser(const SupervisionResult& run, const RaisedException& raised) {
  std::optional<pid_t> found;
  for (const auto& [pid, identity] : run.processes) {
    const bool match = (raised.process_index && identity.role == ProcessRole::kSpawned &&
                        identity.spawn_index == raised.process_index) ||
                       (!raised.process_index && raised.rank &&
                        identity.role == ProcessRole::kRank && identity.rank == raised.rank);
    if (match && (!found || identity.ppid == run.main_pid)) found = pid;
  }
  return found.value_or(run.main_pid);
}

// A job that failed with no cause explain knows, after a Python exception: quote the
// exception's line and name the process that raised it (issue 20 #11).
void name_the_exception(const PostmortemInput& input, Postmortem& result) {
  const std::optional<RaisedException> raised = last_python_exception(input.output);
  if (!raised) return;
  const SupervisionResult& run = *input.run;
  const pid_t pid = raiser(run, *raised);
  std::string who;
  if (raised->process_index) {
    who = fmt::format("process {}", *raised->process_index);
  } else if (raised->rank) {
    who = fmt::format("rank {}", *raised->rank);
  }
  result.process = name_process(input, pid);
  if (pid != run.main_pid || who.empty()) {
    result.process->fate = "raised " + raised->text;
  } else {
    // The sampler never saw that process: the main process reports it.
    result.process->fate += fmt::format(" after {} raised {}", who, raised->text);
  }
  result.log_lines.insert(result.log_lines.begin(),
                          fmt::format("line {}: {}", raised->line, raised->text));
  result.reasoning.push_back(fmt::format(
      "No resource of the host explains the failure: the job's own code raised {}{} (line {} of "
      "the output; the traceback above it shows where).",
      raised->type, who.empty() ? "" : " in " + who, raised->line));
}

/// "DataLoader worker (pid 12) killed by SIGKILL": the post-mortem's one line.
std::string summarize(const Culprit& culprit) {
  return fmt::format("{} (pid {}) {}", culprit.role, culprit.pid, culprit.fate);
}

/// A SIGKILL reads as the OOM killer. When the kernel log covers the whole run and has no
/// OOM kill in it, and memory never ran low (so a userspace killer such as earlyoom or
/// systemd-oomd had no reason either), the signal came from outside: a time limit, a
/// preemption, a stop that timed out, or a user. Then `result` says so and this returns true.
bool blame_outside_kill(const PostmortemInput& input, Postmortem& result) {
  constexpr double kLowAvailablePercent = 10;  // earlyoom's default trigger
  constexpr double kPressurePercent = 10;      // watch's memory_psi default
  constexpr double kCgroupFullPercent = 90;
  const SupervisionResult& run = *input.run;
  // Either record says no OOM kill touched the job: the kernel log over the whole run, or
  // the job's own cgroup's oom_kill counter (it counts kills by any OOM killer, global too).
  const bool kernel_clean = input.kernel_log_covers_job && input.oom_events.empty();
  const bool cgroup_clean = input.cgroup_path && *input.cgroup_path != "/" &&
                            input.cgroup_oom_kills_before && input.cgroup_oom_kills_after &&
                            *input.cgroup_oom_kills_before == *input.cgroup_oom_kills_after;
  if (!input.oom_events.empty() || (!kernel_clean && !cgroup_clean)) return false;
  const std::optional<MemoryLow> low = lowest_memory(run);
  if (!low) return false;
  const double available_percent =
      100.0 * static_cast<double>(low->available) / static_cast<double>(low->total);
  if (available_percent < kLowAvailablePercent || low->psi_full >= kPressurePercent ||
      low->cgroup_percent >= kCgroupFullPercent) {
    return false;
  }
  // The killed process: one headroom reaped, else the one the output names (a DataLoader
  // worker is reaped by its parent). A userspace killer's own line in the output decides.
  if (input.diagnosis != nullptr && !input.diagnosis->fields.killed_pids.empty()) {
    return false;
  }
  std::optional<pid_t> pid = first_exit_with_signal(run, SIGKILL);
  if (!pid) pid = pid_from_output(input, false);
  if (!pid) return false;
  result.cause = "terminated";
  result.confidence = "medium";
  result.host_cause = false;
  result.process = name_process(input, *pid);
  result.process->fate = "killed by SIGKILL, not by the OOM killer";
  if (kernel_clean)
    result.evidence.push_back({"kernel_oom_kills_during_job", std::uint64_t{0}, "count"});
  if (cgroup_clean) result.evidence.push_back({"cgroup_oom_kills", std::uint64_t{0}, "count"});
  result.evidence.push_back({"host_mem_available_min_bytes", low->available, "bytes"});
  result.evidence.push_back({"host_mem_total_bytes", low->total, "bytes"});
  std::uint64_t peak_tree = 0;
  for (const JobSample& sample : run.timeline.samples())
    peak_tree = std::max(peak_tree, sample.tree.rss_bytes);
  std::uint64_t peak_process = 0;
  for (const ProcessExit& exit : run.exits)
    peak_process = std::max(peak_process, exit.max_rss_bytes);
  if (peak_tree > 0) result.evidence.push_back({"job_rss_peak_bytes", peak_tree, "bytes"});
  if (peak_process > 0)
    result.evidence.push_back({"process_rss_peak_bytes", peak_process, "bytes"});
  result.reasoning = {
      kernel_clean ? "the kernel log covers the whole run and has no OOM kill in it: the kernel "
                     "OOM killer did not send this SIGKILL."
                   : "the job's memory cgroup counted no OOM kill during the run: no OOM killer "
                     "ended a process of it.",
      fmt::format("memory never ran low ({} available at the least, {} of {}), so a userspace "
                  "OOM killer (earlyoom, systemd-oomd) had no reason to either.",
                  format_bytes(low->available), format_percent(available_percent),
                  format_bytes(low->total)),
      "SIGKILL came from outside the job: a time limit or preemption (Slurm, Kubernetes), "
      "`timeout -s KILL`, a stop that timed out (systemd, docker stop), or a user (kill -9)."};
  result.fix = {
      "find who sent it: Slurm: sacct -j $SLURM_JOB_ID -o JobID,State,ExitCode,Elapsed,Timelimit; "
      "Kubernetes: kubectl describe pod (Last State, liveness probe, events); systemd: "
      "journalctl -u UNIT; docker: docker inspect -f '{{.State}}' CONTAINER",
      "userspace OOM killers log their kills: journalctl -u earlyoom -u systemd-oomd"};
  result.summary = summarize(*result.process);
  return true;
}

}  // namespace

std::string describe_wait_status(int wait_status) {
  if (WIFSIGNALED(wait_status)) return "killed by " + signal_name(WTERMSIG(wait_status));
  if (WIFEXITED(wait_status)) return fmt::format("exited with status {}", WEXITSTATUS(wait_status));
  return "stopped";
}

Postmortem build_postmortem(const PostmortemInput& input) {
  const SupervisionResult& run = *input.run;
  Postmortem result;
  result.could_not_see = input.could_not_see;
  add_exits(input, result);

  const std::vector<OomEvent> ooms = job_oom_events(input);
  // The cgroup's counter counts every member's kills: the job's only if it lost a process so.
  const std::uint64_t cgroup_kills =
      input.cgroup_oom_kills_before && input.cgroup_oom_kills_after &&
              *input.cgroup_oom_kills_after > *input.cgroup_oom_kills_before &&
              job_lost_a_process_to_sigkill(input)
          ? *input.cgroup_oom_kills_after - *input.cgroup_oom_kills_before
          : 0;
  const bool killed_in_tree =
      std::any_of(run.exits.begin(), run.exits.end(), [&](const ProcessExit& exit) {
        return WIFSIGNALED(exit.wait_status) && !was_forwarded(run, WTERMSIG(exit.wait_status));
      });
  const bool main_signaled = WIFSIGNALED(run.wait_status);
  const int main_signal = main_signaled ? WTERMSIG(run.wait_status) : 0;
  const Candidate* verdict = input.diagnosis != nullptr ? input.diagnosis->verdict() : nullptr;

  result.needed = run.exit_code != 0 || killed_in_tree || !ooms.empty() || cgroup_kills > 0 ||
                  run.stall.has_value();
  if (!result.needed) return result;

  // A job stopped by a signal the user sent to headroom is not a failure to diagnose,
  // unless the kernel also killed something of it.
  const bool forwarded_stop =
      !run.forwarded.empty() && ooms.empty() && cgroup_kills == 0 && !run.stall &&
      ((main_signaled && was_forwarded(run, main_signal)) ||
       (!main_signaled && run.exit_code >= 128 && was_forwarded(run, run.exit_code - 128)) ||
       verdict == nullptr || !is_host_cause(verdict->cause));
  if (forwarded_stop) {
    result.stopped = true;
    result.cause = "stopped";
    result.confidence = "high";
    result.process = name_process(input, run.main_pid);
    result.summary = fmt::format("the job was stopped by {} sent to headroom and forwarded to it",
                                 signal_name(run.forwarded.front().signal));
    return result;
  }

  // `headroom run -- job | head`: the reader of the output went away and the
  // job died of SIGPIPE, as it would have without headroom. Not a failure.
  const bool reader_gone = main_signaled && main_signal == SIGPIPE && ooms.empty() &&
                           cgroup_kills == 0 && !run.stall &&
                           (verdict == nullptr || !is_host_cause(verdict->cause));
  if (reader_gone) {
    result.stopped = true;
    result.cause = "stopped";
    result.confidence = "high";
    result.process = name_process(input, run.main_pid);
    result.summary =
        "the job was stopped by SIGPIPE: the reader of its output went away (e.g. `| head`)";
    return result;
  }

  if (!ooms.empty() || cgroup_kills > 0) {
    result.cause = "host_oom";
    result.confidence = !ooms.empty() ? "high" : "medium";
  } else if (verdict != nullptr && verdict->cause != "unknown") {
    result.cause = verdict->cause;
    result.confidence = std::string(to_string(verdict->confidence));
  } else if (run.stall) {
    result.cause = "disk_full";
    result.confidence = "medium";
  } else if (first_exit_with_signal(run, SIGBUS)) {
    result.cause = "shm_too_small";
    result.confidence = "low";
  } else {
    result.cause = verdict != nullptr ? verdict->cause : "unknown";
    result.confidence = verdict != nullptr ? std::string(to_string(verdict->confidence)) : "low";
  }
  result.host_cause = is_host_cause(result.cause);
  if (verdict != nullptr && verdict->cause == result.cause) result.reasoning = verdict->reasoning;
  if (result.cause == "host_oom" && ooms.empty() && cgroup_kills == 0 &&
      blame_outside_kill(input, result)) {
    return result;
  }

  // Which process.
  std::optional<pid_t> pid;
  if (result.cause == "host_oom") {
    for (const OomEvent& event : ooms) {
      if (in_tree(run, event.pid)) pid = static_cast<pid_t>(event.pid);
    }
    if (!pid) pid = pid_from_output(input, true);
    if (!pid) pid = first_exit_with_signal(run, SIGKILL);
  } else if (result.cause == "shm_too_small" || result.cause == "shm_stale") {
    pid = pid_from_output(input, false);
    if (!pid) pid = first_exit_with_signal(run, SIGBUS);
  } else {
    pid = pid_from_output(input, false);
  }
  result.process = name_process(input, pid.value_or(run.main_pid));
  Culprit& culprit = *result.process;
  if (result.cause == "host_oom") {
    for (const OomEvent& event : ooms) {
      if (event.pid == culprit.pid) {
        culprit.fate = fmt::format("killed by the kernel OOM killer ({}, {} resident)",
                                   to_string(event.constraint), format_bytes(event.rss_bytes()));
        if (culprit.name.empty()) culprit.name = event.comm;
      }
    }
  }
  if (culprit.fate.empty() && input.diagnosis != nullptr &&
      !input.diagnosis->fields.signals.empty() && culprit.pid != run.main_pid) {
    culprit.fate = "killed by signal: " + input.diagnosis->fields.signals.front();
  }
  if (culprit.fate.empty()) culprit.fate = describe_wait_status(run.wait_status);

  if (result.cause == "unknown") name_the_exception(input, result);
  add_timeline_evidence(input, ooms, cgroup_kills, result);
  if (input.diagnosis != nullptr) {
    for (const EvidenceLine& line : input.diagnosis->evidence) {
      if (result.log_lines.size() >= 6) break;
      if (line.cause == result.cause || result.log_lines.empty()) {
        result.log_lines.push_back(fmt::format("line {}: {}", line.line, line.text));
      }
    }
  }
  for (const OomEvent& event : ooms) {
    result.log_lines.push_back(fmt::format(
        "kernel: Killed process {} ({}), {} constraint, cgroup {}", event.pid, event.comm,
        to_string(event.constraint), event.oom_cgroup.empty() ? "-" : event.oom_cgroup));
  }
  if (run.stall) {
    result.reasoning.push_back(
        "The job stopped producing output after a 'No space left on device' error: it is stalled, "
        "not "
        "running.");
  }
  result.fix = input.remedy;
  result.summary = summarize(culprit);
  return result;
}

}  // namespace headroom
