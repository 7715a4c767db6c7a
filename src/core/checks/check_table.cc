#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "core/checks/check.h"

namespace headroom {

namespace {

constexpr std::array<CheckSpec, 11> kChecks{{
    {"container.runtime", "bare host, Docker, Kubernetes or Slurm; IPC namespace",
     check_container_runtime},
    {"shm.capacity", "/dev/shm present, writable and big enough for the DataLoader",
     check_shm_capacity},
    {"shm.stale", "segments in /dev/shm and SysV shm that no live process holds", check_shm_stale},
    {"tmp",
     "the temp dir Python will use: space, inodes, a working AF_UNIX socket, and exec for "
     "compiled kernels",
     check_tmp},
    {"disk.space", "free space and inodes of each --dir, and room for the next checkpoint",
     check_disk_space},
    {"memory", "available memory, swap, PSI, the memory cgroup, the commit limit and ulimit -v",
     check_memory},
    {"fd.limit", "RLIMIT_NOFILE against PyTorch's file_descriptor sharing", check_fd_limit},
    {"kernel.oom", "OOM kills in the kernel log in the last 24 hours", check_kernel_oom},
    {"pids.limit", "room for the job's processes and threads: ulimit -u, pids cgroup, threads-max",
     check_pids_limit},
    {"fsize.limit", "RLIMIT_FSIZE (ulimit -f) against checkpoints and logs", check_fsize_limit},
    {"memlock.limit", "RLIMIT_MEMLOCK (ulimit -l) where RDMA devices exist (NCCL over InfiniBand)",
     check_memlock_limit},
}};

bool selected(const CheckOptions& options, std::string_view id) {
  if (options.only.empty()) return true;
  return std::any_of(options.only.begin(), options.only.end(), [&](const std::string& prefix) {
    return id.substr(0, prefix.size()) == prefix || prefix.substr(0, id.size()) == id;
  });
}

}  // namespace

std::span<const CheckSpec> check_table() { return kChecks; }

Result<void> validate(const CheckOptions& options) {
  if (options.warn_percent <= 0 || options.warn_percent > 100) {
    return fail(Error::invalid(
        fmt::format("--warn-percent must be in (0, 100], got {}", options.warn_percent)));
  }
  if (options.critical_percent <= 0 || options.critical_percent > 100) {
    return fail(Error::invalid(
        fmt::format("--critical-percent must be in (0, 100], got {}", options.critical_percent)));
  }
  if (options.warn_percent > options.critical_percent) {
    return fail(Error::invalid("--warn-percent must not exceed --critical-percent"));
  }
  if (options.ranks == 0) return fail(Error::invalid("--ranks must be at least 1"));
  if (options.prefetch == 0 && options.workers > 0) {
    return fail(Error::invalid("--prefetch must be at least 1 when --workers is set"));
  }
  if (options.keep == 0) return fail(Error::invalid("--keep must be at least 1"));
  for (const std::string& prefix : options.only) {
    const bool known = std::any_of(kChecks.begin(), kChecks.end(), [&](const CheckSpec& spec) {
      return spec.id.substr(0, prefix.size()) == prefix ||
             prefix.substr(0, spec.id.size()) == spec.id;
    });
    if (!known) return fail(Error::invalid(fmt::format("--only: no check named '{}'", prefix)));
  }
  return {};
}

Report run_checks(const Context& context, const CheckOptions& options) {
  const Runtime runtime = detect_runtime(context);
  const CheckInput input{context, options, runtime};
  Report report;
  report.environment = std::string(to_string(runtime.kind));
  for (const CheckSpec& spec : kChecks) {
    if (!selected(options, spec.id)) continue;
    std::vector<Finding> findings = spec.run(input);
    for (Finding& finding : findings) report.findings.push_back(std::move(finding));
  }
  report.sort_worst_first();
  return report;
}

}  // namespace headroom
