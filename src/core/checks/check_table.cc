#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "core/checks/check.h"
#include "core/thresholds.h"

namespace headroom {

namespace {

constexpr std::array<CheckSpec, 12> kChecks{{
    {"container.runtime", "bare host, Docker, Kubernetes or Slurm; IPC namespace",
     check_container_runtime, "container.runtime"},
    {"shm.capacity", "/dev/shm present, writable and big enough for the DataLoader",
     check_shm_capacity, "shm.capacity"},
    {"shm.stale", "segments in /dev/shm and SysV shm that no live process holds", check_shm_stale,
     "shm.stale"},
    {"tmp",
     "the temp dir Python will use: space, inodes, a working AF_UNIX socket, and exec for "
     "compiled kernels",
     check_tmp, "tmp.space tmp.socket tmp.exec"},
    {"disk.space", "free space and inodes of each --dir, and room for the next checkpoint",
     check_disk_space, "disk.space"},
    {"memory", "available memory, swap, PSI, the memory cgroup, the commit limit and ulimit -v",
     check_memory, "memory.available memory.cgroup memory.commit"},
    {"fd.limit", "RLIMIT_NOFILE against PyTorch's file_descriptor sharing", check_fd_limit,
     "fd.limit fd.system"},
    {"kernel.oom", "OOM kills in the kernel log in the last 24 hours", check_kernel_oom,
     "kernel.oom"},
    {"pids.limit", "room for the job's processes and threads: ulimit -u, pids cgroup, threads-max",
     check_pids_limit, "pids.limit"},
    {"fsize.limit", "RLIMIT_FSIZE (ulimit -f) against checkpoints and logs", check_fsize_limit,
     "fsize.limit"},
    {"memlock.limit", "RLIMIT_MEMLOCK (ulimit -l) where RDMA devices exist (NCCL over InfiniBand)",
     check_memlock_limit, "memlock.limit"},
    {"job.shape", "the CPUs and GPUs the job's --workers and --gpus need, against those seen",
     check_job_shape, "job.shape"},
}};

/// The finding ids of one check.
std::vector<std::string_view> ids_of(const CheckSpec& spec) {
  std::vector<std::string_view> ids;
  std::string_view rest = spec.findings;
  while (!rest.empty()) {
    const std::size_t space = rest.find(' ');
    ids.push_back(rest.substr(0, space));
    if (space == std::string_view::npos) break;
    rest.remove_prefix(space + 1);
  }
  return ids;
}

/// Whether --only names finding `id`: the id itself or a prefix of it ("shm", "tmp.").
bool selected(const CheckOptions& options, std::string_view id) {
  if (options.only.empty()) return true;
  return std::any_of(options.only.begin(), options.only.end(), [&](const std::string& prefix) {
    return id.substr(0, prefix.size()) == prefix;
  });
}

/// Whether any finding of the check is selected.
bool runs(const CheckOptions& options, const CheckSpec& spec) {
  const std::vector<std::string_view> ids = ids_of(spec);
  return std::any_of(ids.begin(), ids.end(),
                     [&](std::string_view id) { return selected(options, id); });
}

}  // namespace

std::span<const CheckSpec> check_table() { return kChecks; }

std::vector<std::string_view> finding_ids() {
  std::vector<std::string_view> ids;
  for (const CheckSpec& spec : kChecks) {
    for (std::string_view id : ids_of(spec)) ids.push_back(id);
  }
  return ids;
}

Result<void> validate(const CheckOptions& options) {
  // Messages name the fields; the CLI says its flags (cli/check_options.cc).
  const PercentThresholds thresholds{options.warn_percent, options.critical_percent};
  if (auto valid = thresholds.validate(); !valid) return valid;
  if (options.ranks == 0) return fail(Error::invalid("ranks must be at least 1"));
  if (options.prefetch == 0 && options.workers > 0) {
    return fail(Error::invalid("prefetch must be at least 1 when workers is set"));
  }
  if (options.keep == 0) return fail(Error::invalid("keep must be at least 1"));
  const std::vector<std::string_view> ids = finding_ids();
  for (const std::string& prefix : options.only) {
    const bool known = std::any_of(ids.begin(), ids.end(), [&](std::string_view id) {
      return !prefix.empty() && id.substr(0, prefix.size()) == prefix;
    });
    if (!known) {
      return fail(Error::invalid(
          fmt::format("only: no check named '{}' (checks: {})", prefix, fmt::join(ids, ", "))));
    }
  }
  return {};
}

Report run_checks(const Context& context, const CheckOptions& options) {
  const Runtime runtime = detect_runtime(context);
  const CheckInput input{context, options, runtime};
  Report report;
  report.environment = std::string(to_string(runtime.kind));
  for (const CheckSpec& spec : kChecks) {
    if (!runs(options, spec)) continue;
    std::vector<Finding> findings = spec.run(input);
    for (Finding& finding : findings) {
      if (selected(options, finding.id)) report.findings.push_back(std::move(finding));
    }
  }
  report.sort_worst_first();
  return report;
}

}  // namespace headroom
