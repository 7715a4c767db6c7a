#include <gtest/gtest.h>

#include "core/checks/check.h"
#include "core/fixture_context.h"

namespace headroom {
namespace {

using testing::FakeSyscalls;
using testing::fixture_context;

Finding run(const Context& context) {
  const Runtime runtime;
  const CheckOptions options;
  auto findings = check_kernel_oom(CheckInput{context, options, runtime});
  EXPECT_EQ(findings.size(), 1U);
  return findings.front();
}

TEST(KernelOom, RecentMemcgKillWarnsOlderHostKillIsOnlyCounted) {
  FakeSyscalls syscalls;
  const Finding finding = run(fixture_context("cgroup_v2", syscalls));
  EXPECT_EQ(finding.severity, Severity::kWarn);  // never critical
  EXPECT_EQ(testing::evidence_text(finding, "oom_kills_24h"), "1");
  EXPECT_EQ(testing::evidence_text(finding, "oom_kills_since_boot"), "2");
  EXPECT_EQ(testing::evidence_text(finding, "last_kill_pid"), "48211");
  EXPECT_EQ(testing::evidence_text(finding, "last_kill_comm"), "pt_main_thread");
  EXPECT_EQ(testing::evidence_text(finding, "last_kill_constraint"), "memcg");
  EXPECT_NE(
      finding.summary.find("pt_main_thread (pid 48211) in memory cgroup /system.slice/docker-"),
      std::string::npos)
      << finding.summary;
  EXPECT_NE(finding.summary.find("2h 0m ago"), std::string::npos) << finding.summary;
}

// run's preflight: another user's kill is not this job's news (the recorded host's
// process is in the root cgroup, "/", which holds every cgroup: the uid decides).
TEST(KernelOom, JobScopeLeavesOutOtherUsersKillsAndCountsThem) {
  FakeSyscalls syscalls;
  const Context context = fixture_context("cgroup_v2", syscalls);
  const Runtime runtime;
  CheckOptions options;
  options.oom_job_uid = 1000;
  Finding finding = check_kernel_oom(CheckInput{context, options, runtime}).front();
  EXPECT_EQ(finding.severity, Severity::kOk) << finding.summary;
  EXPECT_EQ(testing::evidence_text(finding, "oom_kills_24h"), "0");
  EXPECT_EQ(testing::evidence_text(finding, "oom_kills_24h_elsewhere"), "1");
  EXPECT_EQ(testing::evidence_text(finding, "scope"), "uid 1000 in memory cgroup /");

  options.oom_job_uid = 0;  // the killed pt_main_thread's user
  finding = check_kernel_oom(CheckInput{context, options, runtime}).front();
  EXPECT_EQ(finding.severity, Severity::kWarn) << finding.summary;
  EXPECT_EQ(testing::evidence_text(finding, "last_kill_pid"), "48211");
  EXPECT_NE(finding.summary.find("of uid 0 in memory cgroup /"), std::string::npos)
      << finding.summary;
}

TEST(KernelOom, NoKillsOnTheRecordedHost) {
  FakeSyscalls syscalls;
  const Finding finding = run(fixture_context("bare_host", syscalls));
  EXPECT_EQ(finding.severity, Severity::kOk) << finding.summary;
  EXPECT_NE(testing::evidence_text(finding, "records_read"), "0");
}

TEST(KernelOom, UnreadableLogIsUnknownWithTheReason) {
  FakeSyscalls syscalls;
  const Finding finding = run(fixture_context("docker_64m_shm", syscalls));
  EXPECT_EQ(finding.severity, Severity::kUnknown);
  EXPECT_NE(finding.reason.find("/dev/kmsg"), std::string::npos) << finding.reason;
}

}  // namespace
}  // namespace headroom
