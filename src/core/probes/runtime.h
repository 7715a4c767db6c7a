#pragma once
// Where the job runs: bare host, Docker/containerd, Kubernetes, Podman, inside
// a Slurm allocation. Decides which dialect remedies are printed in.
// Sources: /.dockerenv (Docker), /run/.containerenv (Podman), /proc/1/cgroup
// and /proc/self/cgroup paths ("docker", "kubepods", "containerd"),
// KUBERNETES_SERVICE_HOST and /var/run/secrets/kubernetes.io (Kubernetes),
// SLURM_JOB_ID (Slurm), and the /dev/shm mount (Docker's private one is a tmpfs
// whose source is "shm").

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/context.h"

namespace headroom {

enum class RuntimeKind { kHost, kDocker, kKubernetes, kPodman, kSlurm };

/// "host", "docker", "kubernetes", "podman", "slurm".
[[nodiscard]] std::string_view to_string(RuntimeKind kind);

/// The detected environment and the signs that gave it away.
struct Runtime {
  RuntimeKind kind = RuntimeKind::kHost;
  bool in_container = false;
  bool slurm = false;  ///< a Slurm job, possibly also in a container
  /// Whether /dev/shm and the IPC namespace are the host's (docker --ipc=host);
  /// nullopt when it cannot be told from inside.
  std::optional<bool> ipc_host;
  std::vector<std::string> signs;  ///< e.g. "/.dockerenv exists"
};

/// Detects the runtime of the context's process. Never fails: missing files are no sign.
[[nodiscard]] Runtime detect_runtime(const Context& context);

}  // namespace headroom
