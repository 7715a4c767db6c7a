#pragma once
// The end of `headroom run`: from what supervise() saw to the post-mortem, in one call.
// It picks the job's memory cgroup from the samples, takes the kernel's OOM kills of
// the job's time (by the kernel log's sequence number, or by time), decides whether the
// kernel log still covers the job, runs explain over the kept output of a job that ended
// badly, confirms it on the host (conclude(), the explain pipeline) and builds the verdict.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

#include "core/checks/check.h"
#include "core/context.h"
#include "core/postmortem/postmortem.h"
#include "core/signatures/catalog.h"
#include "core/supervise/supervisor.h"

namespace headroom {

/// When the job started: the wall time, and the kernel log's next sequence number then
/// (nullopt when the kernel log could not be read).
struct JobStart {
  std::chrono::system_clock::time_point time;
  std::optional<std::uint64_t> kernel_sequence;
};

/// Read just before the job starts: which kernel records are the job's.
[[nodiscard]] JobStart mark_job_start(const Context& context);

/// The post-mortem of a supervised job. `options` is the job's shape (the checks judge
/// this job, and the remedy asks for the /dev/shm size the preflight asked for).
[[nodiscard]] Postmortem conclude_run(const Context& context, const SupervisionResult& run,
                                      const CheckOptions& options, const JobStart& started,
                                      const Catalog& catalog);

/// The captured output explain reads: the kept tail, without its first partial line when
/// older output was dropped.
[[nodiscard]] std::string_view output_for_explain(const SupervisionResult& run);

}  // namespace headroom
