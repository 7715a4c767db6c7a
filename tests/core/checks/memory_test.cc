// memory.available and memory.cgroup on the fixture trees.

#include <gtest/gtest.h>

#include "core/checks/check.h"
#include "core/fixture_context.h"

namespace headroom {
namespace {

using testing::FakeSyscalls;
using testing::fixture_context;

Finding find(const std::vector<Finding>& findings, std::string_view id) {
  for (const Finding& finding : findings) {
    if (finding.id == id) return finding;
  }
  throw std::runtime_error("no finding " + std::string(id));
}

std::string all_remedies(const Finding& finding) {
  std::string text;
  for (const std::string& line : finding.remedy) text += line + "\n";
  return text;
}

std::vector<Finding> run(const Context& context, const CheckOptions& options) {
  const Runtime runtime = detect_runtime(context);
  return check_memory(CheckInput{context, options, runtime});
}

TEST(MemoryAvailable, BareHostIsOkWithPsiEvidence) {
  FakeSyscalls syscalls;
  const auto findings = run(fixture_context("bare_host", syscalls), CheckOptions{});
  const Finding& available = find(findings, "memory.available");
  EXPECT_EQ(available.severity, Severity::kOk) << available.summary;
  EXPECT_NE(testing::evidence_text(available, "mem_available_bytes"), "<missing>");
  EXPECT_EQ(testing::evidence_text(available, "psi_full_avg10"), "0.0%");
}

TEST(MemoryAvailable, WorkersThatDoNotFitAreCritical) {
  FakeSyscalls syscalls;
  CheckOptions options;
  options.workers = 15;
  options.ranks = 8;
  options.worker_rss = 1ULL << 30;  // 8 x 16 x 1 GiB = 128 GiB on a 24 GiB host
  const Finding& available =
      find(run(fixture_context("bare_host", syscalls), options), "memory.available");
  EXPECT_EQ(available.severity, Severity::kCritical);
  EXPECT_EQ(testing::evidence_text(available, "job_need_bytes"), "128.0 GiB");
  EXPECT_NE(available.summary.find("8 ranks x (15 workers + 1)"), std::string::npos)
      << available.summary;
  EXPECT_NE(all_remedies(available).find("num_workers="), std::string::npos);
}

TEST(MemoryCgroup, DockerPastOomKillsWarnWithDockerRemedy) {
  FakeSyscalls syscalls;
  const Finding& cgroup =
      find(run(fixture_context("docker_64m_shm", syscalls), CheckOptions{}), "memory.cgroup");
  EXPECT_EQ(cgroup.severity, Severity::kWarn) << cgroup.summary;
  EXPECT_EQ(testing::evidence_text(cgroup, "limit_bytes"), "8.0 GiB");
  EXPECT_EQ(testing::evidence_text(cgroup, "oom_kill_count"), "2");
  EXPECT_NE(cgroup.summary.find("OOM-killed"), std::string::npos) << cgroup.summary;

  CheckOptions options;
  options.workers = 8;
  options.worker_rss = 1ULL << 30;  // 9 GiB > 8 GiB - 1.2 GiB
  const Finding& tight =
      find(run(fixture_context("docker_64m_shm", syscalls), options), "memory.cgroup");
  EXPECT_EQ(tight.severity, Severity::kCritical);
  EXPECT_NE(all_remedies(tight).find("docker run --memory="), std::string::npos);
  EXPECT_NE(all_remedies(tight).find("num_workers=5"), std::string::npos) << all_remedies(tight);
}

TEST(MemoryCgroup, WithinTenPercentWarns) {
  FakeSyscalls syscalls;
  CheckOptions options;
  options.workers = 0;
  // cgroup_v2: 2 GiB limit, 1932735283 used -> 214748365 left; need 200 MiB.
  options.worker_rss = 200ULL << 20;
  const Finding& cgroup =
      find(run(fixture_context("cgroup_v2", syscalls), options), "memory.cgroup");
  EXPECT_EQ(cgroup.severity, Severity::kWarn) << cgroup.summary;
  EXPECT_NE(cgroup.summary.find("less than 10%"), std::string::npos) << cgroup.summary;
}

TEST(MemoryCgroup, SlurmAncestorLimitAndSlurmRemedy) {
  FakeSyscalls syscalls;
  Context context = fixture_context("cgroup_v1", syscalls);
  context.environment["SLURM_JOB_ID"] = "4242";
  CheckOptions options;
  options.workers = 4;
  options.worker_rss = 1ULL << 30;
  const Finding& cgroup = find(run(context, options), "memory.cgroup");
  EXPECT_EQ(cgroup.severity, Severity::kCritical) << cgroup.summary;
  EXPECT_EQ(testing::evidence_text(cgroup, "limit_bytes"), "16.0 GiB");
  EXPECT_EQ(testing::evidence_text(cgroup, "limit_set_by"),
            "/sys/fs/cgroup/memory/slurm/uid_1000/job_4242");
  EXPECT_NE(all_remedies(cgroup).find("--mem="), std::string::npos) << all_remedies(cgroup);
}

TEST(MemoryCgroup, KubernetesEmptyDirShmCountsAgainstTheLimit) {
  FakeSyscalls syscalls;
  CheckOptions options;
  options.workers = 4;
  options.worker_rss = 512ULL << 20;   // 5 x 512 MiB = 2.5 GiB: fits 3.25 GiB alone
  options.batch_bytes = 128ULL << 20;  // + (4 x 2 + 2) x 128 MiB = 1.25 GiB of /dev/shm: does not
  const Finding& cgroup =
      find(run(fixture_context("k8s_emptydir_memory", syscalls), options), "memory.cgroup");
  EXPECT_EQ(cgroup.severity, Severity::kCritical) << cgroup.summary;
  EXPECT_EQ(testing::evidence_text(cgroup, "shm_charged_bytes"), "1.3 GiB");
  EXPECT_NE(cgroup.summary.find("emptyDir of medium Memory"), std::string::npos) << cgroup.summary;
  EXPECT_NE(all_remedies(cgroup).find("limits: {memory:"), std::string::npos);

  // The same job without the emptyDir (runtime's own shm) is not charged for it.
  const Finding& no_shm =
      find(run(fixture_context("k8s_no_shm", syscalls), options), "memory.cgroup");
  EXPECT_EQ(testing::evidence_text(no_shm, "shm_charged_bytes"), "<missing>");
  EXPECT_EQ(no_shm.severity, Severity::kOk) << no_shm.summary;
}

TEST(MemoryCgroup, UnlimitedIsOkWithEvidence) {
  FakeSyscalls syscalls;
  const Finding& cgroup =
      find(run(fixture_context("bare_host", syscalls), CheckOptions{}), "memory.cgroup");
  EXPECT_EQ(cgroup.severity, Severity::kOk);
  EXPECT_EQ(testing::evidence_text(cgroup, "limited"), "no");
  EXPECT_EQ(testing::evidence_text(cgroup, "cgroup_version"), "v1");
  EXPECT_NE(cgroup.summary.find("no limit"), std::string::npos) << cgroup.summary;
}

}  // namespace
}  // namespace headroom
