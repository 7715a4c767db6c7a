#include "core/kernel/runtime.h"

#include <gtest/gtest.h>

#include "core/fixture_context.h"

namespace headroom {
namespace {

using testing::FakeSyscalls;
using testing::fixture_context;

bool mentions(const std::vector<std::string>& lines, std::string_view text) {
  for (const std::string& line : lines) {
    if (line.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(DetectRuntime, StaleDockerenvOnThisVmIsDiscounted) {
  // Recorded on a Firecracker VM whose image kept /.dockerenv from `docker build`.
  FakeSyscalls syscalls;
  const Runtime runtime = detect_runtime(fixture_context("bare_host", syscalls));
  EXPECT_EQ(runtime.kind, RuntimeKind::kHost);
  EXPECT_FALSE(runtime.in_container);
  EXPECT_EQ(runtime.initial_pid_namespace, true);
  EXPECT_EQ(runtime.ipc_host, true);
  EXPECT_EQ(runtime.shm_origin, ShmOrigin::kHost);
  EXPECT_TRUE(mentions(runtime.discounted, "/.dockerenv exists but is ignored"));
  EXPECT_TRUE(mentions(runtime.signs, "kthreadd"));
}

TEST(DetectRuntime, DockerWithDefaultShm) {
  FakeSyscalls syscalls;
  const Runtime runtime = detect_runtime(fixture_context("docker_64m_shm", syscalls));
  EXPECT_EQ(runtime.kind, RuntimeKind::kDocker);
  EXPECT_TRUE(runtime.in_container);
  EXPECT_EQ(runtime.initial_pid_namespace, false);  // root sees no pid 2
  EXPECT_EQ(runtime.shm_origin, ShmOrigin::kRuntimePrivate);
  EXPECT_EQ(runtime.ipc_host, false);
  EXPECT_TRUE(mentions(runtime.signs, "/.dockerenv exists"));
  EXPECT_TRUE(mentions(runtime.signs, "/docker/"));
}

TEST(DetectRuntime, KubernetesEmptyDirMemory) {
  FakeSyscalls syscalls;
  const Runtime runtime = detect_runtime(fixture_context("k8s_emptydir_memory", syscalls));
  EXPECT_EQ(runtime.kind, RuntimeKind::kKubernetes);
  EXPECT_EQ(runtime.shm_origin, ShmOrigin::kEmptyDirMemory);
  EXPECT_EQ(runtime.ipc_host, false);
  EXPECT_TRUE(mentions(runtime.signs, "KUBERNETES_SERVICE_HOST"));
}

TEST(DetectRuntime, KubernetesWithoutShmVolumeFromTheCgroupAlone) {
  FakeSyscalls syscalls;
  Context context = fixture_context("k8s_no_shm", syscalls);
  context.environment.clear();  // no env: the kubepods cgroup and the secrets dir suffice
  const Runtime runtime = detect_runtime(context);
  EXPECT_EQ(runtime.kind, RuntimeKind::kKubernetes);
  EXPECT_EQ(runtime.shm_origin, ShmOrigin::kRuntimePrivate);
  EXPECT_TRUE(mentions(runtime.signs, "kubepods"));
}

TEST(DetectRuntime, SlurmJobOnAHost) {
  FakeSyscalls syscalls;
  Context context = fixture_context("cgroup_v1", syscalls);
  context.environment["SLURM_JOB_ID"] = "4242";
  const Runtime runtime = detect_runtime(context);
  EXPECT_EQ(runtime.kind, RuntimeKind::kSlurm);
  EXPECT_TRUE(runtime.slurm);
  EXPECT_FALSE(runtime.in_container);
  EXPECT_EQ(runtime.ipc_host, true);
}

TEST(ClassifyShm, HostSharedInDocker) {
  MountEntry mount;
  mount.mount_point = "/dev/shm";
  mount.fstype = "tmpfs";
  mount.source = "tmpfs";
  mount.root = "/";
  EXPECT_EQ(classify_shm(mount, RuntimeKind::kDocker, true), ShmOrigin::kHostShared);
  EXPECT_EQ(classify_shm(mount, RuntimeKind::kKubernetes, true), ShmOrigin::kEmptyDirMemory);
  mount.fstype = "ext4";
  EXPECT_EQ(classify_shm(mount, RuntimeKind::kDocker, true), ShmOrigin::kOther);
}

}  // namespace
}  // namespace headroom
