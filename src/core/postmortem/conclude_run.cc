#include "core/postmortem/conclude_run.h"

#include <sys/wait.h>

#include <utility>

#include "core/explain/host.h"
#include "core/kernel/kmsg.h"
#include "core/signatures/analyzer.h"

namespace headroom {

namespace {

// The job's memory cgroup in the samples: the first, or the last one seen.
const CgroupSample* job_cgroup(const SupervisionResult& run, bool first) {
  const CgroupSample* found = nullptr;
  for (const JobSample& sample : run.timeline.samples()) {
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
                       const CheckOptions& options, const JobStart& started) {
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
    const auto& records = kernel_log->records;
    if (started.kernel_sequence) {
      input.kernel_log_covers_job =
          records.empty() || records.front().sequence <= *started.kernel_sequence;
    } else {
      input.kernel_log_covers_job =
          kernel_log->boot_time.has_value() &&
          (records.empty() ||
           *kernel_log->boot_time + std::chrono::duration_cast<std::chrono::system_clock::duration>(
                                        records.front().since_boot) <=
               started.time);
    }
    for (OomEvent& event : parse_oom_events(records, kernel_log->boot_time)) {
      // Only kills during the job: by sequence number, exact (an OOM kill of the
      // previous job a moment before this one started is not this job's); else by
      // time, with a second of slack for the kernel's clock.
      const bool before = started.kernel_sequence
                              ? event.sequence < *started.kernel_sequence
                              : event.time && *event.time < started.time - std::chrono::seconds(1);
      if (!before) input.oom_events.push_back(std::move(event));
    }
  } else {
    input.could_not_see.push_back("kernel log: " + kernel_log.error().message);
  }
  if (options.workers > 0 && options.batch_bytes)
    input.shm_need_bytes = dataloader_shm_need(options);
  for (const PartialFailure& failure : run.unreadable) {
    // Probes of a pid that just exited fail too; only missing privileges are blind spots.
    if (failure.error.code == Error::Code::kPermissionDenied) {
      input.could_not_see.push_back(failure.error.message);
    }
  }
  return input;
}

}  // namespace

JobStart mark_job_start(const Context& context) {
  JobStart start;
  if (auto kernel_log = read_kmsg(context)) start.kernel_sequence = next_sequence(*kernel_log);
  start.time = context.syscalls->now();
  return start;
}

std::string_view output_for_explain(const SupervisionResult& run) {
  std::string_view tail = run.output_tail;
  if (run.output_bytes > tail.size()) {
    const std::size_t newline = tail.find('\n');
    tail.remove_prefix(newline == std::string_view::npos ? tail.size() : newline + 1);
  }
  return tail;
}

Postmortem conclude_run(const Context& context, const SupervisionResult& run,
                        const CheckOptions& options, const JobStart& started,
                        const Catalog& catalog) {
  PostmortemInput input = gather(context, run, options, started);
  input.output = output_for_explain(run);
  // Whether the job ended badly does not depend on its output: decide that first, and
  // run explain (over the kept tail only) just for a job that did.
  Postmortem postmortem = build_postmortem(input);
  if (!postmortem.needed) return postmortem;
  Diagnosis diagnosis;
  LogAnalyzer analyzer(catalog);
  analyzer.feed(input.output);
  analyzer.note_exit(
      WIFEXITED(run.wait_status) ? std::optional<int>(WEXITSTATUS(run.wait_status)) : std::nullopt,
      WIFSIGNALED(run.wait_status) ? std::optional<int>(WTERMSIG(run.wait_status)) : std::nullopt);
  diagnosis = analyzer.finish();
  input.diagnosis = &diagnosis;
  postmortem = build_postmortem(input);
  if (postmortem.stopped) return postmortem;
  // Confirm on the host (kernel log for the pids, /dev/shm, free space of the named
  // paths) and rebuild with the confirmed diagnosis and its remedies.
  input.remedy = conclude(&context, diagnosis, options).remedy;
  return build_postmortem(input);
}

}  // namespace headroom
