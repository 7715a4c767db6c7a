#include "core/explain/host.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/signatures/analyze.h"

namespace headroom {
namespace {

Diagnosis bus_error() {
  return testing::analyze_text(
      "RuntimeError: DataLoader worker (pid 6062) is killed by signal: Bus error. It is possible "
      "that dataloader's "
      "workers are out of shared memory. Please try to raise your shared memory limit.\n");
}

TEST(ApplyHost, StaleSegmentsOnTheHostTurnShmTooSmallIntoShmStale) {
  Diagnosis diagnosis = bus_error();
  ASSERT_EQ(testing::verdict_cause(diagnosis), "shm_too_small");
  HostConfirmation host;
  host.performed = true;
  host.facts.push_back({"shm.stale",
                        "shm_stale",
                        HostVerdict::kConfirms,
                        "53.9 MiB of /dev/shm is held by segments no process has open",
                        {}});
  apply_host(diagnosis, host);
  EXPECT_EQ(testing::verdict_cause(diagnosis), "shm_stale");
  ASSERT_GE(diagnosis.candidates.size(), 2U);
  EXPECT_EQ(diagnosis.candidates[1].cause, "shm_too_small");
  EXPECT_NE(diagnosis.verdict()->reasoning.back().find("segments of dead jobs"), std::string::npos);
}

TEST(ApplyHost, ConfirmationRaisesConfidenceAndSaysSo) {
  Diagnosis diagnosis = testing::analyze_text(
      "RuntimeError: DataLoader worker (pid 7) is killed by signal: Killed. \n");
  ASSERT_EQ(diagnosis.verdict()->confidence, Confidence::kMedium);
  HostConfirmation host;
  host.performed = true;
  host.facts.push_back({"kmsg",
                        "host_oom",
                        HostVerdict::kConfirms,
                        "the kernel log has the OOM killer killing pid 7",
                        {}});
  apply_host(diagnosis, host);
  EXPECT_EQ(diagnosis.verdict()->confidence, Confidence::kHigh);
  EXPECT_EQ(diagnosis.verdict()->reasoning.back(),
            "confirmed on this host: the kernel log has the OOM killer killing pid 7.");
}

HostConfirmation on(RuntimeKind kind) {
  HostConfirmation host;
  host.runtime.kind = kind;
  return host;
}

/// A host where shm.capacity measured /dev/shm, the RAM and the cgroup limit.
HostConfirmation measured(RuntimeKind kind, std::uint64_t recommended, std::uint64_t size,
                          std::uint64_t ram, std::optional<std::uint64_t> limit = {}) {
  HostConfirmation host = on(kind);
  host.performed = true;
  HostFact fact{"shm.capacity", "shm_too_small", HostVerdict::kConfirms, "", {}};
  fact.evidence.push_back({"recommended_size_bytes", recommended, "bytes"});
  fact.evidence.push_back({"size_bytes", size, "bytes"});
  fact.evidence.push_back({"memory_total_bytes", ram, "bytes"});
  if (limit) fact.evidence.push_back({"memory_limit_bytes", *limit, "bytes"});
  host.facts.push_back(fact);
  return host;
}

TEST(RemediesFor, ShmTooSmallSpeaksTheRuntimesDialect) {
  const Diagnosis diagnosis = bus_error();
  const std::vector<std::string> lines = remedies_for(diagnosis, on(RuntimeKind::kDocker));
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines.front().find("--shm-size="), std::string::npos) << lines.front();
  EXPECT_NE(remedies_for(diagnosis, on(RuntimeKind::kKubernetes)).front().find("emptyDir"),
            std::string::npos);
}

TEST(RemediesFor, ShmTooSmallSaysTheResizeOnceAndPointsAtStaleSegments) {
  // The bus error in a worker, then torch's ENOSPC: two signatures, each with "give the job
  // a larger /dev/shm" in its catalog remedies, which the resize command already says.
  const Diagnosis diagnosis = testing::analyze_text(
      "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient "
      "shared memory (shm).\n"
      "RuntimeError: DataLoader worker (pid 6062) is killed by signal: Bus error. \n"
      "RuntimeError: unable to write to file </torch_26711_3635627799_2>: No space left on "
      "device (28)\n");
  ASSERT_EQ(testing::verdict_cause(diagnosis), "shm_too_small");
  const std::vector<std::string> lines = remedies_for(diagnosis, on(RuntimeKind::kHost));
  ASSERT_FALSE(lines.empty());
  // Without the job's shape or a measured /dev/shm (--no-host): the size `check` asks for
  // without one, and only if it is larger than the one there.
  EXPECT_EQ(lines.front(),
            "sudo mount -o remount,size=1024m /dev/shm (only if df -h /dev/shm shows less than "
            "1.0 GiB)");
  // With the size the shm.capacity check recommended for the job's shape: that one.
  EXPECT_EQ(
      remedies_for(diagnosis, measured(RuntimeKind::kHost, 144ULL << 20, 64ULL << 20, 24ULL << 30))
          .front(),
      "sudo mount -o remount,size=144m /dev/shm");
  for (const std::string& line : lines) {
    EXPECT_FALSE(line.starts_with("give the job a larger")) << line;
  }
  EXPECT_NE(std::find(lines.begin(), lines.end(),
                      "or remove the segments of dead jobs: headroom clean --shm"),
            lines.end());
  EXPECT_EQ(std::count_if(
                lines.begin(), lines.end(),
                [](const std::string& line) { return line.starts_with("or lower num_workers"); }),
            1);
  EXPECT_NE(std::find(lines.begin(), lines.end(),
                      "or lower num_workers / prefetch_factor / batch size so fewer batches are "
                      "in flight in /dev/shm"),
            lines.end());
}

// issue 16: one remedy, bounded by what the host has.
TEST(RemediesFor, ShmNeverAsksForLessThanIsThere) {
  // A 23 GiB /dev/shm that is full: remounting it at 2 GiB would shrink it.
  const std::vector<std::string> lines =
      remedies_for(bus_error(), measured(RuntimeKind::kHost, 2ULL << 30, 23ULL << 30, 24ULL << 30));
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.front().find("sudo mount"), std::string::npos) << lines.front();
  EXPECT_NE(lines.front().find("already 23.0 GiB"), std::string::npos) << lines.front();
  EXPECT_NE(lines.front().find("headroom clean --shm"), std::string::npos) << lines.front();
  for (const std::string& line : lines) EXPECT_EQ(line.find("remount,size="), std::string::npos);
}

TEST(RemediesFor, ShmNeverAsksForMoreThanTheHostsMemory) {
  const std::vector<std::string> lines = remedies_for(
      bus_error(), measured(RuntimeKind::kDocker, 72ULL << 30, 64ULL << 20, 24ULL << 30));
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines.front().find("no /dev/shm size fixes this here"), std::string::npos)
      << lines.front();
  EXPECT_NE(lines.front().find("24.0 GiB of RAM"), std::string::npos) << lines.front();
  for (const std::string& line : lines) EXPECT_EQ(line.find("--shm-size"), std::string::npos);
}

TEST(RemediesFor, ASlurmJobAsksTheAdminsFirstAndForMemoryItsCgroupLacks) {
  HostConfirmation host =
      measured(RuntimeKind::kSlurm, 8ULL << 30, 2ULL << 30, 256ULL << 30, 4ULL << 30);
  host.runtime.slurm = true;
  const std::vector<std::string> lines = remedies_for(bus_error(), host);
  ASSERT_GE(lines.size(), 2U);
  EXPECT_TRUE(lines.front().starts_with("in a Slurm job /dev/shm is the node's")) << lines.front();
  EXPECT_NE(lines.front().find("sudo mount -o remount,size=8g /dev/shm"), std::string::npos);
  EXPECT_NE(lines[1].find("sbatch --mem=12g"), std::string::npos) << lines[1];
}

}  // namespace
}  // namespace headroom
