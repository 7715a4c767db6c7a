#include "core/postmortem/timeline_evidence.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/units.h"

namespace headroom {

namespace {

const Sample* last_host(const SupervisionResult& run) {
  const auto& samples = run.timeline.samples();
  for (auto it = samples.rbegin(); it != samples.rend(); ++it) {
    if (it->host) return &*it->host;
  }
  return nullptr;
}

bool path_under(const std::string& path, const std::string& dir) {
  if (dir.empty() || path.compare(0, dir.size(), dir) != 0) return false;
  return path.size() == dir.size() || dir.back() == '/' || path[dir.size()] == '/';
}

// The watched filesystem a failing path is on: the longest watched path that
// contains it, else one on the same mountpoint, else the first of `role`.
const FilesystemSample* filesystem_for(const Sample& sample, const std::string& path, FsRole role) {
  const FilesystemSample* best = nullptr;
  for (const FilesystemSample& fs : sample.filesystems) {
    if (!fs.ok) continue;
    if (!path.empty() && (path_under(path, fs.path) || path_under(path, fs.mountpoint))) {
      if (best == nullptr || fs.path.size() > best->path.size()) best = &fs;
    }
  }
  if (best != nullptr) return best;
  for (const FilesystemSample& fs : sample.filesystems) {
    if (fs.ok && fs.role == role) return &fs;
  }
  return nullptr;
}

// Smallest available bytes of one watched path over the timeline.
std::uint64_t min_avail(const SupervisionResult& run, const std::string& path) {
  std::uint64_t lowest = ~std::uint64_t{0};
  for (const JobSample& sample : run.timeline.samples()) {
    if (!sample.host) continue;
    for (const FilesystemSample& fs : sample.host->filesystems) {
      if (fs.ok && fs.path == path) lowest = std::min(lowest, fs.avail_bytes);
    }
  }
  return lowest;
}

void filesystem_evidence(const PostmortemInput& input, FsRole role, Postmortem& result) {
  const Sample* sample = last_host(*input.run);
  // The path the log names, when it is on a filesystem of this role: a
  // shared-memory failure's log also names the job's script and data files.
  std::string named;
  if (input.diagnosis != nullptr) {
    for (const std::string& path : input.diagnosis->fields.paths) {
      // Only a path: torch's "failed writing file data/0" names a record in its zip.
      if (!path.starts_with("/")) continue;
      if (role != FsRole::kShm || path.starts_with("/dev/shm")) {
        named = path;
        break;
      }
    }
  }
  if (!named.empty()) result.evidence.push_back({"path", named, ""});
  if (sample == nullptr) {
    result.resource = named.empty() ? std::string(to_string(role)) : named;
    result.could_not_see.push_back("no resource sample was taken before the job ended");
    return;
  }
  const FilesystemSample* fs = filesystem_for(*sample, named, role);
  if (fs == nullptr) {
    result.resource = named;
    result.could_not_see.push_back(
        fmt::format("{} is not on a watched filesystem (add --dir for it)",
                    named.empty() ? "the path" : named));
    return;
  }
  result.resource = fmt::format("{} ({} on {})", fs->path, fs->fstype, fs->mountpoint);
  result.evidence.push_back({"filesystem", fs->path, ""});
  // The lowest free space seen is "at the time" of the failure: by the last
  // sample a dying job may already have released (or unlinked) what it held.
  const std::uint64_t lowest = min_avail(*input.run, fs->path);
  if (lowest >= fs->total_bytes && fs->total_bytes > 0) {
    // Never seen in use: the job filled and emptied it between two samples. A "free
    // 64.0 MiB" would contradict the verdict it supports, so it is not shown.
    result.could_not_see.push_back(fmt::format(
        "{} filling up: it filled and emptied between two samples (a shorter --interval "
        "samples more often)",
        fs->path));
  } else {
    result.evidence.push_back({"free_bytes_min", lowest, "bytes"});
  }
  result.evidence.push_back({"free_bytes_last", fs->avail_bytes, "bytes"});
  result.evidence.push_back({"size_bytes", fs->total_bytes, "bytes"});
}

void shm_evidence(const PostmortemInput& input, Postmortem& result) {
  filesystem_evidence(input, FsRole::kShm, result);
  std::uint64_t peak_mapped = 0;
  for (const JobSample& sample : input.run->timeline.samples()) {
    peak_mapped = std::max(peak_mapped, sample.tree.shmem_bytes);
  }
  // 0 means the samples missed it (the worker that died mapped what it could), not none.
  if (peak_mapped > 0)
    result.evidence.push_back({"job_shm_mapped_peak_bytes", peak_mapped, "bytes"});
  if (input.shm_need_bytes)
    result.evidence.push_back({"shm_need_bytes", *input.shm_need_bytes, "bytes"});
}

// The job's cgroup's peak use as the kernel accounts it: memory.peak (v1
// max_usage_in_bytes) when the job raised it, else the highest memory.current
// sampled (a last sample after the exit included). nullopt outside a cgroup of its own.
std::optional<std::uint64_t> cgroup_memory_peak(const PostmortemInput& input) {
  if (!input.cgroup_path || input.cgroup_path->empty() || *input.cgroup_path == "/")
    return std::nullopt;
  const SupervisionResult& run = *input.run;
  if (run.cgroup_peak && run.cgroup_peak->path == *input.cgroup_path && run.cgroup_peak->at_end &&
      (!run.cgroup_peak->at_start || *run.cgroup_peak->at_end > *run.cgroup_peak->at_start)) {
    return run.cgroup_peak->at_end;
  }
  std::optional<std::uint64_t> sampled;
  const auto consider = [&](const Sample& sample) {
    if (sample.cgroup && sample.cgroup->path == *input.cgroup_path)
      sampled = std::max(sampled.value_or(0), sample.cgroup->usage_bytes);
  };
  for (const JobSample& sample : run.timeline.samples()) {
    if (sample.host) consider(*sample.host);
  }
  if (run.final_host) consider(*run.final_host);
  return sampled;
}

void memory_evidence(const PostmortemInput& input, const std::vector<OomEvent>& ooms,
                     std::uint64_t cgroup_kills, Postmortem& result) {
  if (input.cgroup_path) {
    result.resource =
        input.cgroup_limit_bytes
            ? fmt::format("memory cgroup {} (limit {})", *input.cgroup_path,
                          format_bytes(*input.cgroup_limit_bytes))
            : fmt::format("memory cgroup {} (no limit: host memory)", *input.cgroup_path);
    result.evidence.push_back({"cgroup", *input.cgroup_path, ""});
  } else {
    result.resource = "host memory";
  }
  if (input.cgroup_limit_bytes)
    result.evidence.push_back({"cgroup_limit_bytes", *input.cgroup_limit_bytes, "bytes"});
  if (cgroup_kills > 0) result.evidence.push_back({"cgroup_oom_kills", cgroup_kills, "count"});
  for (const OomEvent& event : ooms) {
    result.evidence.push_back({"killed_pid", static_cast<std::int64_t>(event.pid), ""});
    result.evidence.push_back({"killed_rss_bytes", event.rss_bytes(), "bytes"});
    result.evidence.push_back({"oom_constraint", std::string(to_string(event.constraint)), ""});
  }
  std::uint64_t peak_tree = 0;
  std::optional<std::uint64_t> min_available;
  for (const JobSample& sample : input.run->timeline.samples()) {
    peak_tree = std::max(peak_tree, sample.tree.rss_bytes);
    if (sample.host && sample.host->memory) {
      const std::uint64_t available = sample.host->memory->available_bytes;
      min_available = std::min(min_available.value_or(available), available);
    }
  }
  // In a cgroup of its own the kernel's accounting of the job is the cgroup's: summed RSS
  // counts a page shared by forked workers (or mapped from /dev/shm) once per process and
  // can exceed the very limit that killed the job (issue 20 #13).
  if (const auto peak = cgroup_memory_peak(input)) {
    result.evidence.push_back({"cgroup_memory_peak_bytes", *peak, "bytes"});
  } else if (peak_tree > 0) {  // no sample of the job's tree: nothing was measured
    result.evidence.push_back({"job_rss_peak_bytes", peak_tree, "bytes"});
  }
  // The kernel's own high-water mark of the largest process (wait4), which samples miss
  // when the job lives less than a tick or grows between two.
  std::uint64_t peak_process = 0;
  for (const ProcessExit& exit : input.run->exits)
    peak_process = std::max(peak_process, exit.max_rss_bytes);
  if (peak_process > 0)
    result.evidence.push_back({"process_rss_peak_bytes", peak_process, "bytes"});
  if (min_available)
    result.evidence.push_back({"host_mem_available_min_bytes", *min_available, "bytes"});
}

void fd_evidence(const PostmortemInput& input, Postmortem& result) {
  std::uint64_t peak = 0;
  std::optional<std::uint64_t> limit;
  pid_t holder = 0;
  std::string role;
  for (const JobSample& sample : input.run->timeline.samples()) {
    for (const ProcessSample& process : sample.tree.processes) {
      if (process.fds && *process.fds >= peak) {
        peak = *process.fds;
        limit = process.fd_limit;
        holder = process.identity.pid;
        role = describe_role(process.identity);
      }
    }
  }
  result.resource = "open file descriptors (RLIMIT_NOFILE)";
  if (holder != 0) {
    result.evidence.push_back({"fds_peak", peak, "count"});
    result.evidence.push_back({"fds_peak_process", fmt::format("{} (pid {})", role, holder), ""});
    if (limit) result.evidence.push_back({"fd_limit", *limit, "count"});
  }
}

}  // namespace

void add_timeline_evidence(const PostmortemInput& input, const std::vector<OomEvent>& ooms,
                           std::uint64_t cgroup_kills, Postmortem& result) {
  if (result.cause == "shm_too_small" || result.cause == "shm_stale") {
    shm_evidence(input, result);
  } else if (result.cause == "disk_full") {
    filesystem_evidence(input, FsRole::kDir, result);
  } else if (result.cause == "tmp_full") {
    filesystem_evidence(input, FsRole::kTemp, result);
  } else if (result.cause == "host_oom") {
    memory_evidence(input, ooms, cgroup_kills, result);
  } else if (result.cause == "fd_limit") {
    fd_evidence(input, result);
  }
}

}  // namespace headroom
