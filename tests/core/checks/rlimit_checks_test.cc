// fsize.limit and memlock.limit on recorded trees: overcommit_heuristic (no
// limits, ulimit -l 8192, no RDMA), ulimit_low (ulimit -f 8192 -l 64) and
// rdma_memlock_64k (ulimit -l 64 with two mlx5 devices).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/checks/check.h"
#include "core/fixture_context.h"
#include "core/units.h"

namespace headroom {
namespace {

using testing::evidence_text;
using testing::FakeSyscalls;
using testing::fixture_context;
using ::testing::HasSubstr;
using testing::remedy_text;

Runtime runtime_of(RuntimeKind kind) {
  Runtime runtime;
  runtime.kind = kind;
  runtime.slurm = kind == RuntimeKind::kSlurm;
  runtime.in_container = kind == RuntimeKind::kDocker || kind == RuntimeKind::kKubernetes;
  return runtime;
}

Finding fsize(std::string_view scenario, const CheckOptions& options) {
  FakeSyscalls syscalls;
  const Context context = fixture_context(scenario, syscalls);
  const Runtime runtime = runtime_of(RuntimeKind::kHost);
  return check_fsize_limit(CheckInput{context, options, runtime}).at(0);
}

Finding memlock(std::string_view scenario, const CheckOptions& options,
                RuntimeKind kind = RuntimeKind::kHost) {
  FakeSyscalls syscalls;
  const Context context = fixture_context(scenario, syscalls);
  const Runtime runtime = runtime_of(kind);
  return check_memlock_limit(CheckInput{context, options, runtime}).at(0);
}

TEST(CheckFsizeLimit, UnlimitedIsOk) {
  CheckOptions options;
  options.checkpoint_bytes = 100 * kGiB;
  const Finding finding = fsize("overcommit_heuristic", options);
  EXPECT_EQ(finding.id, "fsize.limit");
  EXPECT_EQ(finding.severity, Severity::kOk);
  EXPECT_EQ(finding.summary, "no file size limit (ulimit -f unlimited)");
  EXPECT_EQ(evidence_text(finding, "soft_limit_bytes"), "unlimited");
}

TEST(CheckFsizeLimit, FiniteLimitWarns) {
  const Finding finding = fsize("ulimit_low", CheckOptions{});
  EXPECT_EQ(finding.severity, Severity::kWarn);
  EXPECT_EQ(finding.summary,
            "file size limit 8.0 MiB (ulimit -f 8192): a checkpoint or log larger than 8.0 MiB "
            "fails (\"[Errno 27] File too large\" in Python, SIGXFSZ elsewhere)");
  EXPECT_EQ(evidence_text(finding, "hard_limit_bytes"), "8.0 MiB");
  const std::string remedy = remedy_text(finding);
  EXPECT_THAT(remedy, HasSubstr("ulimit -f unlimited"));
  EXPECT_THAT(remedy, HasSubstr("'* - fsize unlimited' in /etc/security/limits.conf"));
  EXPECT_THAT(remedy, HasSubstr("LimitFSIZE=infinity"));
}

TEST(CheckFsizeLimit, CheckpointLargerThanTheLimitIsCritical) {
  CheckOptions options;
  options.checkpoint_bytes = 16 * kMiB;
  const Finding finding = fsize("ulimit_low", options);
  EXPECT_EQ(finding.severity, Severity::kCritical);
  EXPECT_THAT(finding.summary, HasSubstr("is below the 16.0 MiB checkpoint: torch.save fails with "
                                         "\"PytorchStreamWriter failed writing file\""));
  options.checkpoint_bytes = 8 * kMiB;  // exactly the limit still fits
  EXPECT_EQ(fsize("ulimit_low", options).severity, Severity::kWarn);
}

TEST(CheckMemlockLimit, NoRdmaDeviceIsOkAndSaysItDoesNotMatter) {
  CheckOptions options;
  options.gpus = 8;
  const Finding finding = memlock("ulimit_low", options);
  EXPECT_EQ(finding.id, "memlock.limit");
  EXPECT_EQ(finding.severity, Severity::kOk);
  EXPECT_EQ(finding.summary,
            "locked-memory limit 64.0 KiB (ulimit -l 64); no RDMA device in /sys/class/infiniband, "
            "so nothing registers memory and it does not matter here");
  EXPECT_EQ(evidence_text(finding, "rdma_device_count"), "0");
}

TEST(CheckMemlockLimit, RdmaWithASmallLimitWarnsForOneProcess) {
  const Finding finding = memlock("rdma_memlock_64k", CheckOptions{}, RuntimeKind::kDocker);
  EXPECT_EQ(finding.severity, Severity::kWarn);
  EXPECT_THAT(
      finding.summary,
      HasSubstr("locked-memory limit 64.0 KiB (ulimit -l 64) with 2 RDMA device(s) (mlx5_0, "
                "mlx5_1)"));
  EXPECT_EQ(evidence_text(finding, "rdma_devices"), "mlx5_0, mlx5_1");
  const std::string remedy = remedy_text(finding);
  EXPECT_THAT(remedy, HasSubstr("docker run --ulimit memlock=-1:-1"));
  EXPECT_THAT(remedy, HasSubstr("default-ulimits"));
}

TEST(CheckMemlockLimit, RdmaWithASmallLimitIsCriticalForMoreGpusOrRanks) {
  CheckOptions gpus;
  gpus.gpus = 2;
  const Finding finding = memlock("rdma_memlock_64k", gpus, RuntimeKind::kKubernetes);
  EXPECT_EQ(finding.severity, Severity::kCritical);
  EXPECT_THAT(finding.summary, HasSubstr("fails with \"ibv_reg_mr failed\""));
  EXPECT_THAT(remedy_text(finding), HasSubstr("containerd.service / crio"));
  CheckOptions ranks;
  ranks.ranks = 2;
  const Finding slurm = memlock("rdma_memlock_64k", ranks, RuntimeKind::kSlurm);
  EXPECT_EQ(slurm.severity, Severity::kCritical);
  const std::string remedy = remedy_text(slurm);
  EXPECT_THAT(remedy, HasSubstr("ulimit -l unlimited"));
  EXPECT_THAT(remedy, HasSubstr("srun --propagate=MEMLOCK"));
  EXPECT_THAT(remedy, HasSubstr("PropagateResourceLimitsExcept=MEMLOCK"));
  EXPECT_THAT(remedy, HasSubstr("LimitMEMLOCK=infinity"));
}

TEST(CheckMemlockLimit, UnreadableLimitsAreUnknown) {
  FakeSyscalls syscalls;
  Context context = fixture_context("rdma_memlock_64k", syscalls);
  context.pid = "999999";
  const Runtime runtime;
  const Finding finding = check_memlock_limit(CheckInput{context, CheckOptions{}, runtime}).at(0);
  EXPECT_EQ(finding.severity, Severity::kUnknown);
}

}  // namespace
}  // namespace headroom
