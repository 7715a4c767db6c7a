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

TEST(RemediesFor, ShmTooSmallSpeaksTheRuntimesDialect) {
  const Diagnosis diagnosis = bus_error();
  Runtime docker;
  docker.kind = RuntimeKind::kDocker;
  const std::vector<std::string> lines = remedies_for(diagnosis, docker);
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines.front().find("--shm-size="), std::string::npos) << lines.front();
  Runtime kubernetes;
  kubernetes.kind = RuntimeKind::kKubernetes;
  EXPECT_NE(remedies_for(diagnosis, kubernetes).front().find("emptyDir"), std::string::npos);
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
  Runtime host;
  host.kind = RuntimeKind::kHost;
  const std::vector<std::string> lines = remedies_for(diagnosis, host);
  ASSERT_FALSE(lines.empty());
  // Without the job's shape: the size `check` asks for without one (kShmSizeWithoutShape).
  EXPECT_EQ(lines.front(), "sudo mount -o remount,size=1024m /dev/shm");
  // With the size the shm.capacity check recommended for the job's shape: that one.
  EXPECT_EQ(remedies_for(diagnosis, host, 144ULL << 20).front(),
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

}  // namespace
}  // namespace headroom
