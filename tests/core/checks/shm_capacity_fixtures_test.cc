// shm.capacity (the lead's check) on the container fixture trees: the verdict
// and the remedy dialect follow the runtime detected from the tree.

#include <gtest/gtest.h>

#include "core/checks/check.h"
#include "core/fixture_context.h"
#include "core/units.h"

namespace headroom {
namespace {

using testing::FakeSyscalls;
using testing::fixture_context;
using testing::fixture_path;

Finding run(std::string_view scenario, std::uint64_t shm_bytes, const CheckOptions& options) {
  FakeSyscalls syscalls;
  FsStats stats;
  stats.total_bytes = shm_bytes;
  stats.free_bytes = shm_bytes;
  stats.avail_bytes = shm_bytes;
  stats.total_inodes = stats.free_inodes = 1000;
  syscalls.set_fs(fixture_path(scenario) / "dev/shm", stats);
  const Context context = fixture_context(scenario, syscalls);
  const Runtime runtime = detect_runtime(context);
  auto findings = check_shm_capacity(CheckInput{context, options, runtime});
  EXPECT_EQ(findings.size(), 1U);
  return findings.front();
}

std::string remedies(const Finding& finding) {
  std::string text;
  for (const std::string& line : finding.remedy) text += line + "\n";
  return text;
}

CheckOptions job() {
  CheckOptions options;
  options.workers = 8;
  options.batch_bytes = 32 * kMiB;  // 8 x 2 x 32 MiB = 512 MiB
  return options;
}

TEST(ShmCapacityFixtures, DockerDefaultIsCriticalWithShmSize) {
  const Finding finding = run("docker_64m_shm", 64 * kMiB, job());
  EXPECT_EQ(finding.severity, Severity::kCritical) << finding.summary;
  EXPECT_NE(remedies(finding).find("docker run --shm-size="), std::string::npos)
      << remedies(finding);
}

TEST(ShmCapacityFixtures, KubernetesWithoutVolumeGetsEmptyDirRemedy) {
  const Finding finding = run("k8s_no_shm", 64 * kMiB, job());
  EXPECT_EQ(finding.severity, Severity::kCritical);
  EXPECT_NE(remedies(finding).find("emptyDir: {medium: Memory, sizeLimit:"), std::string::npos)
      << remedies(finding);
}

TEST(ShmCapacityFixtures, KubernetesEmptyDirOfTwoGiBFits) {
  const Finding finding = run("k8s_emptydir_memory", 2 * kGiB, job());
  EXPECT_EQ(finding.severity, Severity::kOk) << finding.summary;
}

TEST(ShmCapacityFixtures, DockerWithOneGiBFits) {
  const Finding finding = run("cgroup_v2", kGiB, job());
  EXPECT_EQ(finding.severity, Severity::kOk) << finding.summary;
}

}  // namespace
}  // namespace headroom
