// build_postmortem's first decisions: whether a job that ended badly is a
// failure to diagnose at all (a job killed by SIGPIPE because `| head` closed
// its output is not, unless the kernel also killed part of it), and whether a
// SIGKILL was the OOM killer's.

#include "core/postmortem/postmortem.h"

#include <gtest/gtest.h>

#include <algorithm>
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
  SupervisionResult run = killed_by(SIGPIPE);
  run.exits.push_back({4243, SIGKILL, {}});  // a worker the kernel killed
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

// Issue 20 #10: the job's cgroup is a container's, shared with another job; or the
// previous job in it was OOM-killed a moment before this one started. A job that
// lost no process to SIGKILL (here rank 1 raised ValueError) is not an OOM victim.
TEST(Postmortem, OomKillsOfOthersInTheJobsCgroupAreNotTheJobs) {
  SupervisionResult run;
  run.main_pid = 4242;
  run.wait_status = 1 << 8;  // exited with status 1
  run.exit_code = 1;
  run.exits.push_back({run.main_pid, run.wait_status, {}});
  PostmortemInput input;
  input.run = &run;
  input.cgroup_path = "/job";
  input.cgroup_oom_kills_before = 3;
  input.cgroup_oom_kills_after = 4;
  OomEvent other;  // a pid of the same cgroup the job never had
  other.pid = 777;
  other.task_cgroup = "/job";
  other.constraint = OomConstraint::kMemoryCgroup;
  input.oom_events.push_back(other);
  const Postmortem postmortem = build_postmortem(input);
  EXPECT_TRUE(postmortem.needed);
  EXPECT_NE(postmortem.cause, "host_oom");
  ASSERT_TRUE(postmortem.process);
  EXPECT_NE(postmortem.process->pid, 777);
  // The same kill counts once a process of the job did die of SIGKILL (a worker
  // headroom never sampled, killed between two samples).
  run.exits.push_back({4250, SIGKILL, {}});
  EXPECT_EQ(build_postmortem(input).cause, "host_oom");
}

// Issue 20 #11: rank 1 of torch.multiprocessing.spawn raised; main exited 1.
TEST(Postmortem, ARanksExceptionIsQuotedAndTheRankNamed) {
  SupervisionResult run;
  run.main_pid = 100;
  run.wait_status = 1 << 8;
  run.exit_code = 1;
  run.exits.push_back({run.main_pid, run.wait_status, {}});
  for (const pid_t pid : {101, 102}) {
    ProcessIdentity rank;
    rank.pid = pid;
    rank.ppid = 100;
    rank.name = "python3";
    rank.role = ProcessRole::kSpawned;
    rank.spawn_index = pid - 101;
    run.processes[pid] = rank;
  }
  PostmortemInput input;
  input.run = &run;
  input.output =
      "Traceback (most recent call last):\n"
      "torch.multiprocessing.spawn.ProcessRaisedException: \n\n"
      "-- Process 1 terminated with the following error:\n"
      "Traceback (most recent call last):\n"
      "  File \"job.py\", line 8, in worker\n"
      "ValueError: bad label 17 in batch 3\n";
  const Postmortem postmortem = build_postmortem(input);
  EXPECT_EQ(postmortem.cause, "unknown");
  ASSERT_TRUE(postmortem.process);
  EXPECT_EQ(postmortem.process->pid, 102);
  EXPECT_EQ(postmortem.process->role, "process 1");
  EXPECT_EQ(postmortem.process->fate, "raised ValueError: bad label 17 in batch 3");
  ASSERT_FALSE(postmortem.log_lines.empty());
  EXPECT_EQ(postmortem.log_lines.front(), "line 7: ValueError: bad label 17 in batch 3");
  EXPECT_EQ(postmortem.summary, "process 1 (pid 102) raised ValueError: bad label 17 in batch 3");
}

// Issue 20 #13: numbers that do not contradict the verdict.
struct FilesystemCase {
  SupervisionResult run;
  Diagnosis diagnosis;
  PostmortemInput input;

  FilesystemCase(std::string cause, std::string path, FsRole role, std::uint64_t avail) {
    run.main_pid = 100;
    run.wait_status = 1 << 8;
    run.exit_code = 1;
    run.exits.push_back({run.main_pid, run.wait_status, {}});
    JobSample sample;
    sample.host.emplace();
    FilesystemSample fs;
    fs.path = fs.mountpoint = std::move(path);
    fs.fstype = "tmpfs";
    fs.role = role;
    fs.ok = true;
    fs.total_bytes = 64ULL << 20;
    fs.free_bytes = fs.avail_bytes = avail;
    sample.host->filesystems.push_back(fs);
    run.timeline.add(std::move(sample));
    Candidate candidate;
    candidate.cause = std::move(cause);
    candidate.confidence = Confidence::kHigh;
    diagnosis.candidates.push_back(candidate);
    input.run = &run;
    input.diagnosis = &diagnosis;
  }
  [[nodiscard]] std::vector<std::string> evidence_names() const {
    std::vector<std::string> names;
    for (const Evidence& evidence : build_postmortem(input).evidence)
      names.push_back(evidence.name);
    return names;
  }
};

bool has(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

TEST(Postmortem, AZipRecordNameIsNotAPath) {
  // torch 1.13: "PytorchStreamWriter failed writing file data/0: file write failed".
  FilesystemCase job("disk_full", "/ckpt", FsRole::kDir, 0);
  job.diagnosis.fields.paths = {"data/0"};
  const Postmortem postmortem = build_postmortem(job.input);
  for (const Evidence& evidence : postmortem.evidence) {
    EXPECT_NE(evidence.name, "path") << format_value(evidence);
  }
  EXPECT_NE(postmortem.resource.find("/ckpt"), std::string::npos) << postmortem.resource;
}

TEST(Postmortem, AShmFillTheSamplesMissedIsSaidNotShownAsZero) {
  // /dev/shm filled and emptied between two samples: never seen below its size.
  FilesystemCase missed("shm_too_small", "/dev/shm", FsRole::kShm, 64ULL << 20);
  const auto names = missed.evidence_names();
  EXPECT_FALSE(has(names, "job_shm_mapped_peak_bytes"));
  EXPECT_FALSE(has(names, "free_bytes_min"));
  const Postmortem postmortem = build_postmortem(missed.input);
  ASSERT_FALSE(postmortem.could_not_see.empty());
  EXPECT_NE(postmortem.could_not_see.back().find("between two samples"), std::string::npos);
  // Seen: shown.
  FilesystemCase seen("shm_too_small", "/dev/shm", FsRole::kShm, 1ULL << 20);
  EXPECT_TRUE(has(seen.evidence_names(), "free_bytes_min"));
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
