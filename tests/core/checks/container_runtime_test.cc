#include <gtest/gtest.h>

#include "core/checks/check.h"
#include "core/fixture_context.h"

namespace headroom {
namespace {

using testing::FakeSyscalls;
using testing::fixture_context;

Finding run(const Context& context) {
  const Runtime runtime = detect_runtime(context);
  const CheckOptions options;
  auto findings = check_container_runtime(CheckInput{context, options, runtime});
  EXPECT_EQ(findings.size(), 1U);
  return findings.front();
}

TEST(ContainerRuntime, ThisVmIsABareHostDespiteDockerenv) {
  FakeSyscalls syscalls;
  const Finding finding = run(fixture_context("bare_host", syscalls));
  EXPECT_EQ(finding.severity, Severity::kOk);
  EXPECT_EQ(testing::evidence_text(finding, "runtime"), "host");
  EXPECT_EQ(testing::evidence_text(finding, "remedy_dialect"), "host");
  EXPECT_EQ(testing::evidence_text(finding, "ipc_host"), "yes");
  EXPECT_NE(testing::evidence_text(finding, "discounted_signs").find("/.dockerenv"),
            std::string::npos);
  EXPECT_NE(finding.summary.find("bare host"), std::string::npos) << finding.summary;
}

TEST(ContainerRuntime, DockerDefaultShmWarnsAndPointsToShmCapacity) {
  FakeSyscalls syscalls;
  const Finding finding = run(fixture_context("docker_64m_shm", syscalls));
  EXPECT_EQ(finding.severity, Severity::kWarn);
  EXPECT_EQ(testing::evidence_text(finding, "runtime"), "docker");
  EXPECT_EQ(testing::evidence_text(finding, "ipc_host"), "no");
  EXPECT_EQ(testing::evidence_text(finding, "shm_size_bytes"), "64.0 MiB");
  EXPECT_NE(finding.summary.find("shm.capacity"), std::string::npos) << finding.summary;
  ASSERT_FALSE(finding.remedy.empty());
  EXPECT_NE(finding.remedy.front().find("--shm-size="), std::string::npos);
}

TEST(ContainerRuntime, DockerWithBigShmIsOk) {
  FakeSyscalls syscalls;
  const Finding finding = run(fixture_context("cgroup_v2", syscalls));
  EXPECT_EQ(finding.severity, Severity::kOk);
  EXPECT_EQ(testing::evidence_text(finding, "shm_origin"), "runtime-private");
}

TEST(ContainerRuntime, KubernetesDialects) {
  FakeSyscalls syscalls;
  const Finding empty_dir = run(fixture_context("k8s_emptydir_memory", syscalls));
  EXPECT_EQ(empty_dir.severity, Severity::kOk);
  EXPECT_EQ(testing::evidence_text(empty_dir, "remedy_dialect"), "kubernetes");
  EXPECT_EQ(testing::evidence_text(empty_dir, "shm_origin"), "emptydir-memory");
  const Finding no_shm = run(fixture_context("k8s_no_shm", syscalls));
  EXPECT_EQ(no_shm.severity, Severity::kWarn);
  ASSERT_FALSE(no_shm.remedy.empty());
  EXPECT_NE(no_shm.remedy.front().find("medium: Memory"), std::string::npos);
}

TEST(ContainerRuntime, SlurmDialectOnAHost) {
  FakeSyscalls syscalls;
  Context context = fixture_context("cgroup_v1", syscalls);
  context.environment["SLURM_JOB_ID"] = "4242";
  const Finding finding = run(context);
  EXPECT_EQ(testing::evidence_text(finding, "remedy_dialect"), "slurm");
  EXPECT_EQ(testing::evidence_text(finding, "slurm"), "yes");
}

}  // namespace
}  // namespace headroom
