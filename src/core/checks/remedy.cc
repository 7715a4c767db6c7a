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
