// Runtime detection; see runtime.h for the signs and why some are discounted.

#include "core/kernel/runtime.h"

#include <sys/stat.h>

#include <array>

#include "core/kernel/mountinfo.h"

namespace headroom {

namespace {

bool path_exists(const std::filesystem::path& path) {
  struct stat info {};
  return ::lstat(path.c_str(), &info) == 0;
}

bool contains(std::string_view text, std::string_view needle) {
  return text.find(needle) != std::string_view::npos;
}

// Cgroup path fragments each runtime creates (kubepods first: a pod's path
// also names its runtime) (docker: /docker/<id> or
// docker-<id>.scope; containerd/CRI: cri-containerd-, kubepods; CRI-O: crio-;
// Podman: libpod-; LXC: /lxc/).
constexpr std::array<std::string_view, 7> kContainerCgroups{
    "kubepods", "/docker/", "docker-", "containerd", "crio-", "libpod", "/lxc/"};

// Kernel threads are children of kthreadd, pid 2, and only visible from the
// initial pid namespace: a container (without --pid=host) never sees them.
std::optional<bool> initial_pid_namespace(const Context& context, std::vector<std::string>& signs) {
  const SysRoot& root = context.root;
  if (auto comm = root.read(root.proc("2/comm"), 64)) {
    const bool kthreadd = comm->rfind("kthreadd", 0) == 0;
    signs.emplace_back(kthreadd
                           ? "kernel threads are visible (pid 2 is kthreadd): initial pid namespace"
                           : "pid 2 is not kthreadd: a pid namespace");
    return kthreadd;
  }
  // /proc/2 missing: a pid namespace, unless hidepid hides root's processes
  // from an unprivileged caller.
  if (context.syscalls != nullptr && context.syscalls->effective_uid() == 0) {
    signs.emplace_back("no pid 2 visible to root: a pid namespace");
    return false;
  }
  return std::nullopt;
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

std::string_view to_string(ShmOrigin origin) {
  switch (origin) {
    case ShmOrigin::kHost:
      return "host";
    case ShmOrigin::kHostShared:
      return "host-shared";
    case ShmOrigin::kRuntimePrivate:
      return "runtime-private";
    case ShmOrigin::kEmptyDirMemory:
      return "emptydir-memory";
    case ShmOrigin::kOther:
      return "other";
    case ShmOrigin::kUnknown:
      break;
  }
  return "unknown";
}

ShmOrigin classify_shm(const MountEntry& shm, RuntimeKind kind, bool in_container) {
  if (!in_container) return shm.fstype == "tmpfs" ? ShmOrigin::kHost : ShmOrigin::kOther;
  if (shm.fstype != "tmpfs") return ShmOrigin::kOther;
  // Docker, containerd, CRI-O and Podman name a private IPC namespace's tmpfs "shm".
  if (shm.source == "shm") return ShmOrigin::kRuntimePrivate;
  // kubelet mounts a tmpfs at .../volumes/kubernetes.io~empty-dir/<name> and the
  // runtime bind-mounts it; the container sees the tmpfs's root "/" with source
  // "tmpfs". That is the documented way to give a pod /dev/shm (hostIPC pods
  // look the same from inside, and are rare).
  if (shm.root.find("kubernetes.io~empty-dir") != std::string::npos ||
      kind == RuntimeKind::kKubernetes) {
    return ShmOrigin::kEmptyDirMemory;
  }
  // --ipc=host bind-mounts the host's /dev/shm: the tmpfs's own root.
  if (shm.root == "/") return ShmOrigin::kHostShared;
  return ShmOrigin::kOther;
}

Runtime detect_runtime(const Context& context) {
  Runtime runtime;
  const SysRoot& root = context.root;
  std::string cgroups;
  for (const std::string& pid : {std::string("1"), context.pid}) {
    auto text = root.read(root.proc(pid + "/cgroup"), 64 * 1024);
    if (text) cgroups += *text;
  }
  bool container_cgroup = false;
  for (const std::string_view fragment : kContainerCgroups) {
    if (contains(cgroups, fragment)) {
      container_cgroup = true;
      runtime.signs.push_back("cgroup path contains " + std::string(fragment));
      break;
    }
  }
  runtime.initial_pid_namespace = initial_pid_namespace(context, runtime.signs);
  std::string root_fstype;
  std::vector<MountEntry> mounts;
  if (auto read = read_mountinfo(context)) mounts = std::move(*read);
  if (const MountEntry* slash = find_mount(mounts, "/")) root_fstype = slash->fstype;
  // Marker files are trusted unless we see the host's kernel threads and
  // nothing else says container: a host image built by `docker build` keeps
  // /.dockerenv. An overlay root still counts (docker run --pid=host).
  const bool markers_trusted =
      runtime.initial_pid_namespace != true || container_cgroup || root_fstype == "overlay";
  const auto marker = [&](std::string_view path) {
    if (!path_exists(root.host(std::filesystem::path(path)))) return false;
    if (markers_trusted) {
      runtime.signs.push_back(std::string(path) + " exists");
      return true;
    }
    runtime.discounted.push_back(std::string(path) +
                                 " exists but is ignored: kernel threads are visible, the cgroup "
                                 "paths name no container and / is " +
                                 (root_fstype.empty() ? std::string("not overlay") : root_fstype) +
                                 " (a leftover of the image build)");
    return false;
  };

  bool kubernetes = contains(cgroups, "kubepods");
  if (context.env("KUBERNETES_SERVICE_HOST")) {
    kubernetes = true;
    runtime.signs.emplace_back("KUBERNETES_SERVICE_HOST is set");
  }
  kubernetes = marker("/var/run/secrets/kubernetes.io") || kubernetes;
  const bool podman = marker("/run/.containerenv") || contains(cgroups, "libpod");
  const bool docker = marker("/.dockerenv") || (container_cgroup && !kubernetes && !podman);
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

  const MountEntry* shm = find_mount(mounts, "/dev/shm");
  if (shm != nullptr && shm->mount_point == "/dev/shm") {
    runtime.shm_origin = classify_shm(*shm, runtime.kind, runtime.in_container);
  } else if (!mounts.empty()) {
    runtime.shm_origin = ShmOrigin::kOther;  // a plain directory on / or /dev
  }
  switch (runtime.shm_origin) {
    case ShmOrigin::kHost:
    case ShmOrigin::kHostShared:
      runtime.ipc_host = true;
      break;
    case ShmOrigin::kRuntimePrivate:
    case ShmOrigin::kEmptyDirMemory:
      runtime.ipc_host = false;
      break;
    case ShmOrigin::kOther:
    case ShmOrigin::kUnknown:
      if (!runtime.in_container) runtime.ipc_host = true;
      break;
  }
  return runtime;
}

}  // namespace headroom
