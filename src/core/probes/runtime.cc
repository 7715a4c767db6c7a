#include "core/probes/runtime.h"

#include <sys/stat.h>

#include "core/probes/mountinfo.h"

namespace headroom {

namespace {

bool path_exists(const std::filesystem::path& path) {
  struct stat info {};
  return ::lstat(path.c_str(), &info) == 0;
}

bool contains(std::string_view text, std::string_view needle) {
  return text.find(needle) != std::string_view::npos;
}

}  // namespace

std::string_view to_string(RuntimeKind kind) {
  switch (kind) {
    case RuntimeKind::kHost:
      return "host";
    case RuntimeKind::kDocker:
      return "docker";
    case RuntimeKind::kKubernetes:
      return "kubernetes";
    case RuntimeKind::kPodman:
      return "podman";
    case RuntimeKind::kSlurm:
      return "slurm";
  }
  return "host";
}

Runtime detect_runtime(const Context& context) {
  Runtime runtime;
  const SysRoot& root = context.root;
  std::string cgroups;
  for (const char* pid : {"1", "self"}) {
    auto text = root.read(root.proc(std::string(pid) + "/cgroup"), 64 * 1024);
    if (text) cgroups += *text;
  }

  bool kubernetes = false;
  if (context.env("KUBERNETES_SERVICE_HOST")) {
    kubernetes = true;
    runtime.signs.emplace_back("KUBERNETES_SERVICE_HOST is set");
  }
  if (path_exists(root.host("/var/run/secrets/kubernetes.io"))) {
    kubernetes = true;
    runtime.signs.emplace_back("/var/run/secrets/kubernetes.io exists");
  }
  if (contains(cgroups, "kubepods")) {
    kubernetes = true;
    runtime.signs.emplace_back("cgroup path contains kubepods");
  }

  bool docker = false;
  bool podman = false;
  if (path_exists(root.host("/.dockerenv"))) {
    docker = true;
    runtime.signs.emplace_back("/.dockerenv exists");
  }
  if (path_exists(root.host("/run/.containerenv"))) {
    podman = true;
    runtime.signs.emplace_back("/run/.containerenv exists");
  }
  if (contains(cgroups, "/docker/") || contains(cgroups, "docker-") ||
      contains(cgroups, "containerd")) {
    docker = true;
    runtime.signs.emplace_back("cgroup path names docker/containerd");
  }
  if (const auto job = context.env("SLURM_JOB_ID")) {
    runtime.slurm = true;
    runtime.signs.push_back("SLURM_JOB_ID=" + *job);
  }

  if (kubernetes) {
    runtime.kind = RuntimeKind::kKubernetes;
  } else if (podman) {
    runtime.kind = RuntimeKind::kPodman;
  } else if (docker) {
    runtime.kind = RuntimeKind::kDocker;
  } else if (runtime.slurm) {
    runtime.kind = RuntimeKind::kSlurm;
  }
  runtime.in_container = kubernetes || docker || podman;

  if (!runtime.in_container) {
    runtime.ipc_host = true;
  } else if (auto mounts = read_mountinfo(context)) {
    const MountEntry* shm = find_mount(*mounts, "/dev/shm");
    // Docker and containerd give a private IPC namespace a tmpfs named "shm";
    // --ipc=host bind-mounts the host's /dev/shm instead.
    if (shm != nullptr && shm->mount_point == "/dev/shm") {
      runtime.ipc_host = shm->source != "shm";
    }
  }
  return runtime;
}

}  // namespace headroom
