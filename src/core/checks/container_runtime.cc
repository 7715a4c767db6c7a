// container.runtime: where the job runs (bare host, Docker, Kubernetes, Podman,
// a Slurm job), whether its IPC namespace and /dev/shm are the host's, and so
// in which dialect the other checks print their remedies. Informational: the
// verdict on /dev/shm's size belongs to shm.capacity. Source: kernel/runtime.h.

#include <fmt/format.h>

#include "core/checks/check.h"
#include "core/checks/remedy.h"
#include "core/kernel/mountinfo.h"
#include "core/units.h"

namespace headroom {

namespace {

constexpr std::string_view kWhy =
    "Containers give the job a private /dev/shm (64 MiB by default in Docker, containerd and "
    "CRI-O) and their own memory limit; the fix for either is a runtime flag or a pod-spec "
    "field, so the other checks print remedies for the runtime found here.";

// Docker's, containerd's and CRI-O's default --shm-size.
constexpr std::uint64_t kRuntimeDefaultShm = 64 * kMiB;

std::string join(const std::vector<std::string>& items) {
  std::string text;
  for (const std::string& item : items) text += (text.empty() ? "" : "; ") + item;
  return text;
}

std::string describe(const Runtime& runtime) {
  std::string where;
  switch (runtime.kind) {
    case RuntimeKind::kHost:
      where = "bare host (not in a container)";
      break;
    case RuntimeKind::kDocker:
      where = "Docker/containerd container";
      break;
    case RuntimeKind::kKubernetes:
      where = "Kubernetes pod";
      break;
    case RuntimeKind::kPodman:
      where = "Podman container";
      break;
    case RuntimeKind::kSlurm:
      where = "Slurm job on a bare host";
      break;
  }
  if (runtime.slurm && runtime.kind != RuntimeKind::kSlurm) where += " in a Slurm job";
  switch (runtime.shm_origin) {
    case ShmOrigin::kHostShared:
      return where + "; /dev/shm and the IPC namespace are the host's (--ipc=host)";
    case ShmOrigin::kRuntimePrivate:
      return where + "; private IPC namespace with the runtime's own /dev/shm tmpfs";
    case ShmOrigin::kEmptyDirMemory:
      return where + "; /dev/shm is an emptyDir of medium Memory (charged to the pod's memory)";
    case ShmOrigin::kOther:
      return runtime.in_container ? where + "; /dev/shm is not a tmpfs mount of its own" : where;
    case ShmOrigin::kHost:
    case ShmOrigin::kUnknown:
      break;
  }
  return where;
}

}  // namespace

std::vector<Finding> check_container_runtime(const CheckInput& input) {
  const Runtime& runtime = input.runtime;
  Finding finding;
  finding.id = "container.runtime";
  finding.why = std::string(kWhy);
  finding.summary = describe(runtime);
  finding.add("runtime", std::string(to_string(runtime.kind)));
  finding.add("in_container", runtime.in_container);
  finding.add("slurm", runtime.slurm);
  finding.add("ipc_host", runtime.ipc_host ? std::string(*runtime.ipc_host ? "yes" : "no")
                                           : std::string("unknown"));
  finding.add("shm_origin", std::string(to_string(runtime.shm_origin)));
  if (runtime.initial_pid_namespace) {
    finding.add("initial_pid_namespace", *runtime.initial_pid_namespace);
  }
  // Which remedies the other findings print: Slurm's when in a job on a host.
  const std::string_view dialect =
      runtime.kind == RuntimeKind::kHost && runtime.slurm ? "slurm" : to_string(runtime.kind);
  finding.add("remedy_dialect", std::string(dialect));
  finding.add("signs", runtime.signs.empty() ? std::string("none") : join(runtime.signs));
  if (!runtime.discounted.empty()) finding.add("discounted_signs", join(runtime.discounted));

  if (runtime.in_container && runtime.shm_origin == ShmOrigin::kRuntimePrivate) {
    std::optional<std::uint64_t> size;
    if (auto mounts = read_mountinfo(input.context)) {
      if (const MountEntry* shm = find_mount(*mounts, "/dev/shm")) {
        if (auto option = shm->option("size")) {
          if (auto parsed = parse_size(*option)) size = *parsed;
        }
      }
    }
    // Docker writes size=65536k; a runtime tmpfs without size= gets half of RAM.
    if (size) finding.add("shm_size_bytes", *size, "bytes");
    if (size && *size <= kRuntimeDefaultShm) {
      finding.severity = Severity::kWarn;
      finding.summary +=
          fmt::format(" of only {} (the runtime's default; see shm.capacity)", format_bytes(*size));
      finding.remedy = shm_remedies(runtime, kGiB, read_shm_facts(input.context));
    }
  }
  return {finding};
}

}  // namespace headroom
