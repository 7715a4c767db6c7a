#pragma once
// The probes of one sample, one function each. Each times itself, records a
// ProbeStatus, and on failure leaves its fields of the Sample empty.

#include <filesystem>
#include <utility>
#include <vector>

#include "core/sample/sample.h"

namespace headroom {

/// statvfs + the mount of every watched path ("filesystem" probe). A path whose lookup stays
/// on local filesystem types and crosses no symlink is measured here; any other, by
/// filesystem, on a thread of its own, kept in `probers` (by mount point) from one sample to
/// the next: one that has not answered within `timeout` is reported stuck until it answers,
/// never asked twice at once.
void sample_filesystems(const Context& context, const std::vector<WatchedPath>& paths,
                        const Result<const std::vector<MountEntry>*>& mounts,
                        std::chrono::milliseconds timeout,
                        std::map<std::string, StatfsProber>& probers, Sample& sample);
/// /proc/meminfo ("meminfo").
void sample_memory(const Context& context, Sample& sample);
/// /proc/pressure/memory ("pressure"); a kernel without PSI is a failed probe.
void sample_pressure(const Context& context, Sample& sample);
/// The memory cgroup of the context's process ("cgroup"). `mounts`: the sample's mount
/// table, or null to read it. With a memo, located again only now and then
/// (SampleOptions::cgroup_relocate).
void sample_cgroup(const Context& context, const SampleOptions& options, SampleMemo* memo,
                   const std::vector<MountEntry>* mounts, Sample& sample);
/// /proc/vmstat oom_kill ("vmstat"); with a memo, read only when the kernel has logged
/// something since the last sample (an OOM kill always does), else the last value.
void sample_vmstat(const Context& context, SampleMemo* memo, Sample& sample);
/// The victims of the OOM kills since the last sample, from the kernel log, when a
/// counter grew ("oom_victims"; runs only then).
void sample_oom_victims(const Context& context, SampleMemo* memo, Sample& sample);
/// Entries of /proc/<pid>/fd against RLIMIT_NOFILE, or the system's file-nr
/// against fs.file-max ("fds").
void sample_fds(const Context& context, const SampleOptions& options, Sample& sample);
/// Bytes of /dev/shm files nobody holds ("shm_stale"); `memo` (may be null)
/// spares the /proc scan while the candidate files are unchanged.
void sample_shm_stale(const Context& context, const SampleOptions& options, SampleMemo* memo,
                      Sample& sample);

/// Runs `body` (returning Result<void>) as probe `name`: times it and records the status.
template <typename Body>
void run_probe(const Context& context, Sample& sample, std::string name, Body&& body) {
  const auto start = context.syscalls->monotonic();
  const Result<void> result = body();
  const auto elapsed = context.syscalls->monotonic() - start;
  sample.probes.push_back({std::move(name), result.has_value(),
                           std::chrono::duration<double>(elapsed).count(),
                           result ? std::nullopt : std::optional<Error>(result.error())});
}

}  // namespace headroom
