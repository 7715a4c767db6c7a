#include "core/postmortem/postmortem.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstring>

#include "core/postmortem/timeline_evidence.h"
#include "core/signatures/catalog.h"
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

std::vector<OomEvent> job_oom_events(const PostmortemInput& input) {
  std::vector<OomEvent> events;
  for (const OomEvent& event : input.oom_events) {
    const bool same_cgroup = input.cgroup_path && !input.cgroup_path->empty() &&
                             *input.cgroup_path != "/" && event.task_cgroup == *input.cgroup_path;
    if (in_tree(*input.run, event.pid) || same_cgroup) events.push_back(event);
  }
  return events;
}

std::optional<pid_t> first_exit_with_signal(const SupervisionResult& run, int signal) {
  for (const ProcessExit& exit : run.exits) {
    if (WIFSIGNALED(exit.wait_status) && WTERMSIG(exit.wait_status) == signal) return exit.pid;
  }
  return std::nullopt;
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
  const std::uint64_t cgroup_kills =
      input.cgroup_oom_kills_before && input.cgroup_oom_kills_after &&
              *input.cgroup_oom_kills_after > *input.cgroup_oom_kills_before
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
  result.summary = fmt::format("{} (pid {}) {}", culprit.role, culprit.pid, culprit.fate);
  return result;
}

}  // namespace headroom
