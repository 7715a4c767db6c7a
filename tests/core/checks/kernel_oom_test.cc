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
