// build_postmortem's first decisions: whether a job that ended badly is a
// failure to diagnose at all (a job killed by SIGPIPE because `| head` closed
// its output is not, unless the kernel also killed part of it), and whether a
// SIGKILL was the OOM killer's.

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

/// A run killed by SIGKILL whose one sample saw `available` of 24 GiB, with the
/// diagnosis `headroom run` gets from its exit ("SIGKILL, the OOM killer's signal").
struct SigkillCase {
  SupervisionResult run = killed_by(SIGKILL);
  Diagnosis diagnosis;
  PostmortemInput input;

  explicit SigkillCase(std::uint64_t available) {
    JobSample sample;
    sample.host.emplace();
    sample.host->memory = MemorySample{24ULL << 30, available, 0, 0};
    run.timeline.add(std::move(sample));
    Candidate candidate;
    candidate.cause = "host_oom";
    candidate.confidence = Confidence::kMedium;
    diagnosis.candidates.push_back(candidate);
    input.run = &run;
    input.diagnosis = &diagnosis;
    input.kernel_log_covers_job = true;
  }
};

TEST(Postmortem, ASigkillWithNoOomKillInTheKernelLogAndMemoryToSpareCameFromOutside) {
  SigkillCase job(20ULL << 30);
  const Postmortem postmortem = build_postmortem(job.input);
  EXPECT_EQ(postmortem.cause, "terminated");
  EXPECT_FALSE(postmortem.host_cause);
  ASSERT_TRUE(postmortem.process);
  EXPECT_EQ(postmortem.process->fate, "killed by SIGKILL, not by the OOM killer");
  ASSERT_FALSE(postmortem.fix.empty());
  EXPECT_NE(postmortem.fix.front().find("sacct"), std::string::npos);
}

TEST(Postmortem, ASigkillStaysTheOomKillersWhenThatCannotBeRuledOut) {
  {
    SigkillCase job(20ULL << 30);
    job.input.kernel_log_covers_job = false;  // unreadable, or rotated during the run
    EXPECT_EQ(build_postmortem(job.input).cause, "host_oom");
  }
  {
    SigkillCase job(1ULL << 30);  // 4% available: earlyoom's territory
    EXPECT_EQ(build_postmortem(job.input).cause, "host_oom");
  }
  {
    SigkillCase job(20ULL << 30);
    OomEvent event;  // a kill of a pid the job does not know (another pid namespace)
    event.pid = 99999;
    job.input.oom_events.push_back(event);
    EXPECT_EQ(build_postmortem(job.input).cause, "host_oom");
  }
}

}  // namespace
}  // namespace headroom
