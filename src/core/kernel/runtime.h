#pragma once
// Where the job runs: bare host, Docker/containerd, Kubernetes, Podman, inside
// a Slurm allocation. Decides which dialect remedies are printed in.
// Sources: /.dockerenv (Docker), /run/.containerenv (Podman), /proc/1/cgroup
// and /proc/self/cgroup paths ("docker", "kubepods", "containerd", "libpod"),
// KUBERNETES_SERVICE_HOST and /var/run/secrets/kubernetes.io (Kubernetes),
// SLURM_JOB_ID (Slurm), the /dev/shm mount (Docker's private one is a tmpfs
// whose source is "shm"; a Kubernetes emptyDir is a tmpfs whose root lies under
// .../volumes/kubernetes.io~empty-dir/), and whether kernel threads are visible.
// Quirk: marker files lie. A VM or host image built with `docker build` and then
// booted keeps a stale /.dockerenv; a process that sees kthreadd (pid 2) is in
// the initial pid namespace, i.e. not in a container, so file markers alone
// are discounted there unless a cgroup path also names a container.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/context.h"
#include "core/kernel/mountinfo.h"

namespace headroom {

enum class RuntimeKind { kHost, kDocker, kKubernetes, kPodman, kSlurm };

/// "host", "docker", "kubernetes", "podman", "slurm".
[[nodiscard]] std::string_view to_string(RuntimeKind kind);

/// What backs /dev/shm, as far as the mount table tells.
enum class ShmOrigin {
  kUnknown,         ///< no /dev/shm mount found, or mountinfo unreadable
  kHost,            ///< the host's own /dev/shm (not in a container)
  kHostShared,      ///< a container sharing the host's (docker --ipc=host, hostIPC)
  kRuntimePrivate,  ///< the runtime's private tmpfs "shm" (docker --shm-size, 64 MiB default)
  kEmptyDirMemory,  ///< a Kubernetes emptyDir of medium Memory mounted at /dev/shm
  kOther,           ///< some other mount (a bind mount, a disk directory)
};

/// "unknown", "host", "host-shared", "runtime-private", "emptydir-memory", "other".
[[nodiscard]] std::string_view to_string(ShmOrigin origin);

/// The detected environment and the signs that gave it away.
struct Runtime {
  RuntimeKind kind = RuntimeKind::kHost;
  bool in_container = false;
  bool slurm = false;  ///< a Slurm job, possibly also in a container
  /// Whether /dev/shm and the IPC namespace are the host's (docker --ipc=host);
  /// nullopt when it cannot be told from inside.
  std::optional<bool> ipc_host;
  ShmOrigin shm_origin = ShmOrigin::kUnknown;
  /// True when kernel threads are visible (pid 2 is kthreadd): the initial pid
  /// namespace, so not a container; nullopt when /proc/2 cannot be read.
  std::optional<bool> initial_pid_namespace;
  std::vector<std::string> signs;       ///< e.g. "/.dockerenv exists"
  std::vector<std::string> discounted;  ///< signs seen but overruled, with the reason
};

/// Detects the runtime of the context's process. Never fails: missing files are no sign.
[[nodiscard]] Runtime detect_runtime(const Context& context);

/// Classifies the /dev/shm mount of a process given its runtime (pure; used by detect_runtime).
[[nodiscard]] ShmOrigin classify_shm(const MountEntry& shm, RuntimeKind kind, bool in_container);

}  // namespace headroom
