// explain's host confirmation of the task, locked-memory and inotify limits on
// recorded trees: pids_nproc_v2 (ulimit -u 200 with 180 tasks, ulimit -l 64,
// inotify 8192/128) and pids_docker_v1 (pids.max 64, memlock and inotify raised).
#include <gtest/gtest.h>

#include "core/explain/host.h"
#include "core/fixture_context.h"

namespace headroom {
namespace {

Diagnosis limits_diagnosis() {
  Diagnosis diagnosis;
  for (const char* cause : {"pid_limit", "memlock_limit", "inotify_limit"}) {
    Candidate candidate;
    candidate.cause = cause;
    diagnosis.candidates.push_back(candidate);
  }
  return diagnosis;
}

const HostFact& fact(const HostConfirmation& host, std::string_view check) {
  for (const HostFact& item : host.facts) {
    if (item.check == check) return item;
  }
  ADD_FAILURE() << "no fact " << check;
  static const HostFact none;
  return none;
}

TEST(ExplainHostLimits, LowLimitsConfirm) {
  testing::FakeSyscalls syscalls;
  const HostConfirmation host =
      confirm_on_host(testing::fixture_context("pids_nproc_v2", syscalls), limits_diagnosis());
  const HostFact& pids = fact(host, "pids.limit");
  EXPECT_EQ(pids.cause, "pid_limit");
  // One rank without workers needs 4 + 4 = 8 tasks: 20 left is more than twice that.
  EXPECT_EQ(pids.verdict, HostVerdict::kNeutral) << pids.summary;
  EXPECT_NE(pids.summary.find("room for 20 more tasks under RLIMIT_NPROC of uid 1000"),
            std::string::npos)
      << pids.summary;
  const HostFact& memlock = fact(host, "memlock.limit");
  EXPECT_EQ(memlock.verdict, HostVerdict::kConfirms);
  EXPECT_NE(memlock.summary.find("ulimit -l 64"), std::string::npos) << memlock.summary;
  const HostFact& inotify = fact(host, "inotify.limits");
  EXPECT_EQ(inotify.verdict, HostVerdict::kConfirms);
  EXPECT_EQ(inotify.summary,
            "fs.inotify.max_user_watches is 8192 (the old low default) and max_user_instances "
            "128 (the low default)");
}

TEST(ExplainHostLimits, RaisedLimitsStayNeutral) {
  testing::FakeSyscalls syscalls;
  const HostConfirmation host =
      confirm_on_host(testing::fixture_context("pids_docker_v1", syscalls), limits_diagnosis());
  EXPECT_EQ(fact(host, "memlock.limit").verdict, HostVerdict::kNeutral);
  EXPECT_EQ(fact(host, "inotify.limits").verdict, HostVerdict::kNeutral);
  EXPECT_NE(fact(host, "pids.limit").summary.find("pids.max of /sys/fs/cgroup/pids"),
            std::string::npos);
}

TEST(ExplainHostLimits, UnreadableIsUnknown) {
  testing::FakeSyscalls syscalls;
  const HostConfirmation host =
      confirm_on_host(testing::fixture_context("no_such_scenario", syscalls), limits_diagnosis());
  EXPECT_EQ(fact(host, "pids.limit").verdict, HostVerdict::kUnknown);
  EXPECT_EQ(fact(host, "memlock.limit").verdict, HostVerdict::kUnknown);
  EXPECT_EQ(fact(host, "inotify.limits").verdict, HostVerdict::kUnknown);
}

}  // namespace
}  // namespace headroom
