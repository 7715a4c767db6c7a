// pids.limit on recorded trees: pids_docker_v1 (--pids-limit 64, 12 in use,
// OMP_NUM_THREADS=4, root) and pids_nproc_v2 (uid 1000, ulimit -u 200 with 180
// tasks of the user running, 4 CPUs, the slice's TasksMax far away).
#include <gtest/gtest.h>

#include "core/checks/check.h"
#include "core/fixture_context.h"

namespace headroom {
namespace {

using testing::evidence_text;
using testing::FakeSyscalls;
using testing::fixture_context;

Finding run(std::string_view scenario, std::uint64_t workers, std::uint64_t ranks = 1,
            RuntimeKind kind = RuntimeKind::kHost) {
  FakeSyscalls syscalls;
  const Context context = fixture_context(scenario, syscalls);
  CheckOptions options;
  options.workers = workers;
  options.ranks = ranks;
  Runtime runtime;
  runtime.kind = kind;
  auto findings = check_pids_limit(CheckInput{context, options, runtime});
  EXPECT_EQ(findings.size(), 1U);
  return findings.front();
}

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  return text;
}

TEST(CheckPidsLimit, ContainerPidsLimitBelowTheNeedIsCritical) {
  // 4 OMP + 16 feeders + 4 helpers + 16 workers x 3 = 72 > 64 - 12.
  const Finding finding = run("pids_docker_v1", 16, 1, RuntimeKind::kDocker);
  EXPECT_EQ(finding.id, "pids.limit");
  EXPECT_EQ(finding.severity, Severity::kCritical) << finding.summary;
  EXPECT_EQ(evidence_text(finding, "estimated_tasks"), "72");
  EXPECT_EQ(evidence_text(finding, "intra_op_threads"), "4");
  EXPECT_EQ(evidence_text(finding, "intra_op_threads_source"), "OMP_NUM_THREADS");
  EXPECT_EQ(evidence_text(finding, "room_left"), "52");
  EXPECT_EQ(evidence_text(finding, "binding_limit"), "pids.max of /sys/fs/cgroup/pids");
  EXPECT_EQ(evidence_text(finding, "nproc_exempt"), "yes");
  // Root is exempt from RLIMIT_NPROC: its tasks are not counted (a status read per pid).
  EXPECT_EQ(evidence_text(finding, "user_tasks"), "<missing>");
  EXPECT_NE(finding.summary.find("room for 52 more tasks under pids.max of /sys/fs/cgroup/pids "
                                 "(12 of 64 in use); the job needs about 72"),
            std::string::npos)
      << finding.summary;
  EXPECT_NE(joined(finding.remedy).find("docker run --pids-limit 4096"), std::string::npos)
      << joined(finding.remedy);
  // (52 - 4 OMP - 4 helpers) / (3 + 1 feeder) = 11 workers fit.
  EXPECT_NE(joined(finding.remedy).find("num_workers=11 fits the room left"), std::string::npos)
      << joined(finding.remedy);
  EXPECT_NE(joined(finding.remedy).find("OMP_NUM_THREADS=1 saves 3 per rank"), std::string::npos);
}

TEST(CheckPidsLimit, WithinTwiceTheNeedWarns) {
  const Finding finding = run("pids_docker_v1", 8);  // 4 + 8 + 4 + 24 = 40; 80 > 52
  EXPECT_EQ(finding.severity, Severity::kWarn) << finding.summary;
  EXPECT_EQ(evidence_text(finding, "estimated_tasks"), "40");
  EXPECT_NE(joined(finding.remedy)
                .find("TasksMax=4096 (or infinity) in the job's systemd unit or slice, "
                      "or echo 4096 > /sys/fs/cgroup/pids/pids.max"),
            std::string::npos)
      << joined(finding.remedy);
}

TEST(CheckPidsLimit, FewWorkersFit) {
  const Finding finding = run("pids_docker_v1", 2);  // 4 + 2 + 4 + 6 = 16; 32 <= 52
  EXPECT_EQ(finding.severity, Severity::kOk) << finding.summary;
  EXPECT_TRUE(finding.remedy.empty());
}

TEST(CheckPidsLimit, UserProcessLimitCountsTheUsersOtherTasks) {
  // ulimit -u 200 with 180 tasks of uid 1000 running leaves 20; the slice leaves 10623.
  // 4 CPUs: 4 + 4 + 4 + 4 x 3 = 24 > 20.
  const Finding finding = run("pids_nproc_v2", 4);
  EXPECT_EQ(finding.severity, Severity::kCritical) << finding.summary;
  EXPECT_EQ(evidence_text(finding, "binding_limit"), "RLIMIT_NPROC of uid 1000");
  EXPECT_EQ(evidence_text(finding, "user_tasks"), "180");
  EXPECT_EQ(evidence_text(finding, "room_left"), "20");
  EXPECT_EQ(evidence_text(finding, "intra_op_threads_source"), "Cpus_allowed_list");
  EXPECT_EQ(evidence_text(finding, "pids_max_set_by"), "/sys/fs/cgroup/user.slice/user-1000.slice");
  EXPECT_NE(joined(finding.remedy).find("ulimit -u 4096"), std::string::npos)
      << joined(finding.remedy);
}

TEST(CheckPidsLimit, RanksMultiplyAndAddALauncher) {
  const Finding finding = run("pids_docker_v1", 0, 4);  // 4 x (4 + 0 + 4) + 2 = 34
  EXPECT_EQ(evidence_text(finding, "estimated_tasks"), "34");
  EXPECT_EQ(finding.severity, Severity::kWarn);
}

TEST(CheckPidsLimit, NestedOmpListUsesTheOuterLevel) {
  FakeSyscalls syscalls;
  Context context = fixture_context("pids_docker_v1", syscalls);
  context.environment["OMP_NUM_THREADS"] = "6,2";
  const CheckOptions options;
  const Finding finding = check_pids_limit(CheckInput{context, options, Runtime{}}).front();
  EXPECT_EQ(evidence_text(finding, "intra_op_threads"), "6");
  context.environment["OMP_NUM_THREADS"] = "lots";  // unusable: the CPUs decide
  const Finding cpus = check_pids_limit(CheckInput{context, options, Runtime{}}).front();
  EXPECT_EQ(evidence_text(cpus, "intra_op_threads"), "8");
  EXPECT_EQ(evidence_text(cpus, "intra_op_threads_source"), "Cpus_allowed_list");
}

TEST(CheckPidsLimit, NothingReadableIsUnknownWithTheReasons) {
  const Finding finding = run("no_such_scenario", 8);
  EXPECT_EQ(finding.severity, Severity::kUnknown);
  EXPECT_NE(finding.reason.find("pids cgroup"), std::string::npos) << finding.reason;
  EXPECT_NE(finding.reason.find("threads-max"), std::string::npos) << finding.reason;
}

TEST(CheckPidsLimit, IsInTheTableAndSelectableByPrefix) {
  FakeSyscalls syscalls;
  const Context context = fixture_context("pids_docker_v1", syscalls);
  CheckOptions options;
  options.only = {"pids"};
  options.workers = 16;
  ASSERT_TRUE(validate(options));
  const Report report = run_checks(context, options);
  ASSERT_EQ(report.findings.size(), 1U);
  EXPECT_EQ(report.findings[0].id, "pids.limit");
  EXPECT_EQ(report.verdict(), Severity::kCritical);
}

}  // namespace
}  // namespace headroom
