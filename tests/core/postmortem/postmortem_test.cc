// build_postmortem's first decision: whether a job that ended badly is a
// failure to diagnose at all. A job killed by SIGPIPE because `| head` closed
// its output is not, unless the kernel also killed part of it.

#include "core/postmortem/postmortem.h"

#include <gtest/gtest.h>

#include <csignal>

namespace headroom {
namespace {

SupervisionResult killed_by(int signal) {
  SupervisionResult run;
  run.main_pid = 4242;
  run.wait_status = signal;  // WIFSIGNALED with WTERMSIG == signal
  run.exit_code = 128 + signal;
  run.exits.push_back({run.main_pid, run.wait_status, {}});
  return run;
}

Postmortem alone(const SupervisionResult& run) {
  PostmortemInput input;
  input.run = &run;
  return build_postmortem(input);
}

TEST(Postmortem, SigpipeFromAClosedReaderIsAStopNotAFailure) {
  const Postmortem postmortem = alone(killed_by(SIGPIPE));
  EXPECT_TRUE(postmortem.needed);
  EXPECT_TRUE(postmortem.stopped);
  EXPECT_EQ(postmortem.cause, "stopped");
  EXPECT_NE(postmortem.summary.find("SIGPIPE"), std::string::npos) << postmortem.summary;
}

TEST(Postmortem, SigpipeWithAnOomKillInTheJobsCgroupIsStillDiagnosed) {
  const SupervisionResult run = killed_by(SIGPIPE);
  PostmortemInput input;
  input.run = &run;
  input.cgroup_path = "/job";
  input.cgroup_limit_bytes = 1ULL << 30;
  input.cgroup_oom_kills_before = 0;
  input.cgroup_oom_kills_after = 1;
  const Postmortem postmortem = build_postmortem(input);
  EXPECT_FALSE(postmortem.stopped);
  EXPECT_EQ(postmortem.cause, "host_oom");
}

TEST(Postmortem, AnUnexplainedSigkillIsAFailure) {
  const Postmortem postmortem = alone(killed_by(SIGKILL));
  EXPECT_TRUE(postmortem.needed);
  EXPECT_FALSE(postmortem.stopped);
  EXPECT_EQ(postmortem.cause, "unknown");
}

}  // namespace
}  // namespace headroom
