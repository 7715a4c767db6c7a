#include "core/checks/remedy.h"

#include <fmt/format.h>

#include "core/kernel/cgroup.h"
#include "core/kernel/meminfo.h"
#include "core/units.h"

namespace headroom {

ShmFacts read_shm_facts(const Context& context) {
  ShmFacts facts;
  if (context.syscalls != nullptr) {
    if (auto stats = context.syscalls->statvfs(context.root.dev("shm")); stats)
      facts.size_bytes = stats->total_bytes;
  }
  if (auto meminfo = read_meminfo(context); meminfo && meminfo->total_bytes > 0)
    facts.memory_bytes = meminfo->total_bytes;
  if (auto cgroup = read_memory_cgroup(context, context.pid, nullptr, false); cgroup)
    facts.memory_limit_bytes = cgroup->effective_limit_bytes;
  return facts;
}

namespace {

bool in_slurm(const Runtime& runtime) {
  return runtime.kind == RuntimeKind::kSlurm || runtime.slurm;
}

/// The lines that resize /dev/shm to `bytes` where the job runs.
std::vector<std::string> resize_lines(const Runtime& runtime, std::uint64_t bytes,
                                      const ShmFacts& facts) {
  const std::string size = format_docker_size(bytes);
  // Without the size there now, the remount is conditional: it must never shrink it.
  const std::string unless_larger =
      facts.size_bytes
          ? ""
          : fmt::format(" (only if df -h /dev/shm shows less than {})", format_bytes(bytes));
  const bool over_limit = facts.memory_limit_bytes && bytes > *facts.memory_limit_bytes;
  std::vector<std::string> lines;
  switch (runtime.kind) {
    case RuntimeKind::kDocker:
    case RuntimeKind::kPodman:
      lines.push_back(
          fmt::format("restart the container with: docker run --shm-size={} ...", size));
      lines.emplace_back("or share the host's: docker run --ipc=host ...");
      lines.push_back(fmt::format("docker compose: shm_size: '{}'", size));
      if (over_limit) {
        lines.push_back(fmt::format(
            "/dev/shm's pages count against the container's memory limit ({}): raise --memory "
            "by {} too",
            format_bytes(*facts.memory_limit_bytes), format_bytes(bytes)));
      }
      return lines;
    case RuntimeKind::kKubernetes:
      lines.push_back(fmt::format(
          "mount a memory-backed emptyDir at /dev/shm in the pod spec: volumes: [{{name: dshm, "
          "emptyDir: {{medium: Memory, sizeLimit: {}}}}}] and volumeMounts: [{{name: dshm, "
          "mountPath: /dev/shm}}]",
          format_k8s_quantity(bytes)));
      lines.emplace_back(
          "an emptyDir of medium Memory counts against the container's memory limit: raise "
          "resources.limits.memory by the same amount");
      return lines;
    case RuntimeKind::kHost:
    case RuntimeKind::kSlurm:
      break;
  }
  const std::string remount =
      facts.tmpfs ? fmt::format("sudo mount -o remount,size={} /dev/shm{}", size, unless_larger)
                  : fmt::format(
                        "sudo mkdir -p /dev/shm && sudo mount -t tmpfs -o size={},mode=1777 "
                        "tmpfs /dev/shm",
                        size);
  if (in_slurm(runtime)) {
    // A job cannot remount the node's /dev/shm: what the user can do comes first.
    lines.push_back(fmt::format(
        "in a Slurm job /dev/shm is the node's, shared by every job on it: ask the cluster's "
        "admins for one of {} (they run: {}), or run on nodes that have it (sbatch "
        "--constraint/--partition)",
        size, remount));
    if (over_limit) {
      lines.push_back(fmt::format(
          "/dev/shm's pages count against the job's memory ({}): request more, e.g. sbatch "
          "--mem={}",
          format_bytes(*facts.memory_limit_bytes),
          format_docker_size(*facts.memory_limit_bytes + bytes)));
    }
    return lines;
  }
  lines.push_back(remount);
  lines.push_back(fmt::format(
      "make it permanent in /etc/fstab: tmpfs /dev/shm tmpfs defaults,size={} 0 0", size));
  if (over_limit) {
    lines.push_back(fmt::format(
        "/dev/shm's pages count against the job's memory cgroup limit ({}): raise it too "
        "(systemd: MemoryMax= of the job's unit)",
        format_bytes(*facts.memory_limit_bytes)));
  }
  return lines;
}

}  // namespace

std::vector<std::string> shm_remedies(const Runtime& runtime, std::uint64_t bytes,
                                      const ShmFacts& facts,
                                      const std::vector<std::string>& lower) {
  std::vector<std::string> lines;
  if (facts.tmpfs && facts.size_bytes && *facts.size_bytes >= bytes) {
    // Resizing would not grow it: what fills it has to go, or the job has to need less.
    lines.push_back(fmt::format(
        "/dev/shm is already {}, more than the {} a resize would ask for: free what fills it "
        "(headroom clean --shm removes the segments no live process holds)",
        format_bytes(*facts.size_bytes), format_bytes(bytes)));
    for (const std::string& line : lower) lines.push_back("or " + line);
    return lines;
  }
  if (facts.memory_bytes && bytes > *facts.memory_bytes) {
    // A tmpfs larger than RAM pages to swap or OOM-kills the job: no fix.
    lines.push_back(fmt::format(
        "no /dev/shm size fixes this here: the job needs {} of it and the host has {} of RAM{}",
        format_bytes(bytes), format_bytes(*facts.memory_bytes),
        lower.empty() ? "; lower what it keeps there (DataLoader workers x prefetch_factor x "
                        "batch size)"
                      : ""));
    lines.insert(lines.end(), lower.begin(), lower.end());
    return lines;
  }
  lines = resize_lines(runtime, bytes, facts);
  for (const std::string& line : lower) lines.push_back("or " + line);
  return lines;
}

namespace {

/// `target` as ulimit and limits.conf write it (in their unit), or as docker and systemd
/// write it (bytes or a count); RLIM_INFINITY is "unlimited", "-1" and "infinity".
std::string ulimit_number(const RlimitNames& names, std::optional<std::uint64_t> target) {
  return target ? fmt::format("{}", *target / names.ulimit_unit) : "unlimited";
}

}  // namespace

std::vector<std::string> raise_limit_remedies(const Runtime& runtime, const RlimitNames& names,
                                              const Limit& current,
                                              std::optional<std::uint64_t> target) {
  std::vector<std::string> lines;
  if (current.hard > current.soft) {
    lines.push_back(
        "raise the soft limit to the hard limit (no privilege needed) in the shell that starts "
        "the job: " +
        ulimit_command(names, current.hard));
  }
  const bool beyond_hard = target ? *target > current.hard : current.hard != Limit::kUnlimited;
  if (beyond_hard) {
    lines.push_back(fmt::format(
        "as root (raising the hard limit, now {}, needs CAP_SYS_RESOURCE) in the shell that "
        "starts the job: ulimit {} {}",
        limit_text(current.hard, names.ulimit_unit == 1 ? LimitUnit::kCount : LimitUnit::kBytes),
        names.ulimit, ulimit_number(names, target)));
  }
  const std::string docker = target ? fmt::format("{}", *target) : "-1";
  const std::string systemd = target ? fmt::format("{}", *target) : "infinity";
  switch (runtime.kind) {
    case RuntimeKind::kDocker:
    case RuntimeKind::kPodman:
      if (names.docker.empty()) {
        lines.push_back(fmt::format(
            "docker run has no --ulimit for this limit: the container inherits dockerd's, so "
            "remove {}= from dockerd's unit, or raise the soft limit in the entrypoint "
            "(ulimit {} {}, up to the hard limit)",
            names.systemd, names.ulimit, ulimit_number(names, target)));
      } else {
        lines.push_back(fmt::format("docker run --ulimit {0}={1}:{1} ...", names.docker, docker));
      }
      break;
    case RuntimeKind::kKubernetes:
      lines.push_back(fmt::format(
          "a pod spec has no ulimit field: containers inherit the container runtime's {} "
          "(containerd.service / crio); raise it on the nodes, or raise the soft limit up to the "
          "hard one in the entrypoint (ulimit {} $(ulimit -H{}))",
          names.systemd, names.ulimit, names.ulimit.substr(1)));
      break;
    case RuntimeKind::kSlurm:
      lines.push_back(fmt::format(
          "Slurm propagates the submitting shell's limit: ulimit {} before sbatch/srun, or srun "
          "--propagate={}",
          names.ulimit, names.slurm));
      [[fallthrough]];
    case RuntimeKind::kHost:
      lines.push_back(fmt::format(
          "raise the hard limit: '* - {} {}' in /etc/security/limits.conf (new login), or {}={} "
          "in the job's systemd unit",
          names.limits_conf, ulimit_number(names, target), names.systemd, systemd));
      break;
  }
  return lines;
}

std::string ulimit_command(const RlimitNames& names, std::uint64_t value) {
  return fmt::format(
      "ulimit {} {}", names.ulimit,
      ulimit_number(
          names, value == Limit::kUnlimited ? std::nullopt : std::optional<std::uint64_t>(value)));
}

Evidence::Value limit_value(std::uint64_t value) {
  if (value == Limit::kUnlimited) return std::string("unlimited");
  return value;
}

std::string limit_text(std::uint64_t value, LimitUnit unit) {
  if (value == Limit::kUnlimited) return "unlimited";
  return unit == LimitUnit::kBytes ? format_bytes(value) : fmt::format("{}", value);
}

void add_filesystem_evidence(Finding& finding, const FsStats& stats, const MountEntry* mount) {
  if (mount != nullptr) {
    finding.add("mount_point", mount->mount_point);
    finding.add("fstype", mount->fstype);
  }
  finding.add("avail_bytes", stats.avail_bytes, "bytes");
  finding.add("total_bytes", stats.total_bytes, "bytes");
  finding.add("used_percent", stats.used_percent(), "percent");
  // btrfs and some network filesystems report no inode limit (0 total).
  if (stats.total_inodes != 0) {
    finding.add("free_inodes", stats.free_inodes, "inodes");
    finding.add("inodes_used_percent", stats.inodes_used_percent(), "percent");
  }
  finding.add("read_only", stats.read_only || (mount != nullptr && mount->read_only()));
}

}  // namespace headroom
