#include "core/checks/remedy.h"

#include <fmt/format.h>

#include "core/units.h"

namespace headroom {

std::vector<std::string> shm_resize_remedies(const Runtime& runtime, std::uint64_t bytes) {
  std::vector<std::string> lines;
  switch (runtime.kind) {
    case RuntimeKind::kDocker:
    case RuntimeKind::kPodman:
      lines.push_back(fmt::format("restart the container with: docker run --shm-size={} ...",
                                  format_docker_size(bytes)));
      lines.emplace_back("or share the host's: docker run --ipc=host ...");
      lines.push_back(fmt::format("docker compose: shm_size: '{}'", format_docker_size(bytes)));
      break;
    case RuntimeKind::kKubernetes:
      lines.push_back(fmt::format(
          "mount a memory-backed emptyDir at /dev/shm in the pod spec: volumes: [{{name: dshm, "
          "emptyDir: {{medium: Memory, sizeLimit: {}}}}}] and volumeMounts: [{{name: dshm, "
          "mountPath: /dev/shm}}]",
          format_k8s_quantity(bytes)));
      lines.emplace_back(
          "an emptyDir of medium Memory counts against the container's memory limit: raise "
          "resources.limits.memory by the same amount");
      break;
    case RuntimeKind::kHost:
    case RuntimeKind::kSlurm:
      lines.push_back(
          fmt::format("sudo mount -o remount,size={} /dev/shm", format_docker_size(bytes)));
      lines.push_back(
          fmt::format("make it permanent in /etc/fstab: tmpfs /dev/shm tmpfs defaults,size={} 0 0",
                      format_docker_size(bytes)));
      if (runtime.slurm) {
        lines.emplace_back(
            "on a Slurm node /dev/shm is shared by all jobs: ask the admins, or "
            "request a node with more memory");
      }
      break;
  }
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
