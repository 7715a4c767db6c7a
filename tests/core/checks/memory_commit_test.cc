// memory.commit on recorded trees: overcommit_heuristic (this host's defaults),
// overcommit_strict (the same with vm.overcommit_memory=2 and 2.27 GiB left to
// commit), ulimit_low (ulimit -v 614400) and ulimit_v_16g (ulimit -v 16777216).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "core/checks/memory.h"
#include "core/scratch_root.h"
#include "core/units.h"

namespace headroom {
namespace {

using testing::evidence_text;
using testing::FakeSyscalls;
using testing::fixture_context;
using ::testing::HasSubstr;
using testing::remedy_text;

Finding run(const Context& context, const CheckOptions& options,
            RuntimeKind kind = RuntimeKind::kHost) {
  Runtime runtime;
  runtime.kind = kind;
  runtime.slurm = kind == RuntimeKind::kSlurm;
  return check_memory_commit(CheckInput{context, options, runtime});
}

CheckOptions job(std::uint64_t workers, std::uint64_t worker_rss) {
  CheckOptions options;
  options.workers = workers;
  options.worker_rss = worker_rss;
  return options;
}

TEST(CheckMemoryCommit, DefaultsAreOkWithTheEvidence) {
  FakeSyscalls syscalls;
  const Finding finding = run(fixture_context("overcommit_heuristic", syscalls), job(8, kGiB));
  EXPECT_EQ(finding.id, "memory.commit");
  EXPECT_EQ(finding.severity, Severity::kOk) << finding.summary;
  EXPECT_EQ(finding.summary,
            "overcommit heuristic (vm.overcommit_memory=0): forks are not held to CommitLimit; no "
            "address-space limit (ulimit -v unlimited); vm.max_map_count 65530");
  EXPECT_EQ(evidence_text(finding, "overcommit_memory"), "0");
  EXPECT_EQ(evidence_text(finding, "overcommit_ratio"), "50.0%");
  EXPECT_EQ(evidence_text(finding, "commit_limit_bytes"), "11.8 GiB");
  EXPECT_EQ(evidence_text(finding, "address_space_limit_bytes"), "unlimited");
  EXPECT_EQ(evidence_text(finding, "max_map_count"), "65530");
  EXPECT_TRUE(finding.remedy.empty());
}

TEST(CheckMemoryCommit, StrictOvercommitWithoutAJobShapeWarnsWithTheRoom) {
  FakeSyscalls syscalls;
  const Finding finding = run(fixture_context("overcommit_strict", syscalls), CheckOptions{});
  EXPECT_EQ(finding.severity, Severity::kWarn);
  EXPECT_THAT(
      finding.summary,
      HasSubstr("strict overcommit (vm.overcommit_memory=2): 2.3 GiB left under CommitLimit "
                "11.8 GiB (9.5 GiB committed)"));
  EXPECT_EQ(evidence_text(finding, "commit_room_bytes"), "2.3 GiB");
  EXPECT_THAT(remedy_text(finding), HasSubstr("multiprocessing_context='forkserver'"));
  EXPECT_THAT(remedy_text(finding), HasSubstr("sudo sysctl -w vm.overcommit_memory=0"));
}

TEST(CheckMemoryCommit, StrictOvercommitJudgesTheJobWithMemoryAvailablesFormula) {
  FakeSyscalls syscalls;
  const Context context = fixture_context("overcommit_strict", syscalls);
  // 1 x (3 + 1) x 512 MiB = 2 GiB, 2.2 GiB with the margin, of 2.27 GiB: fits.
  EXPECT_EQ(run(context, job(3, 512 * kMiB)).severity, Severity::kOk);
  // 1 x (3 + 1) x 560 MiB = 2.19 GiB fits, but not with 10% to spare.
  const Finding tight = run(context, job(3, 560 * kMiB));
  EXPECT_EQ(tight.severity, Severity::kWarn) << tight.summary;
  EXPECT_THAT(tight.summary, HasSubstr("less than 10% to spare"));
  // 1 x (7 + 1) x 1 GiB = 8 GiB: the fork of a worker fails.
  const Finding critical = run(context, job(7, kGiB));
  EXPECT_EQ(critical.severity, Severity::kCritical);
  EXPECT_THAT(
      critical.summary,
      HasSubstr("the job commits about 8.0 GiB (1 rank x (7 workers + 1) x 1.0 GiB) but only "
                "2.3 GiB left under CommitLimit 11.8 GiB"));
  EXPECT_THAT(critical.summary, HasSubstr("OSError: [Errno 12] Cannot allocate memory"));
  EXPECT_EQ(evidence_text(critical, "job_need_bytes"), "8.0 GiB");
  const std::string remedy = remedy_text(critical);
  EXPECT_THAT(remedy, HasSubstr("num_workers=1 fits the room left"));
  // CommitLimit must reach 9.5 GiB committed + 8.8 GiB: (18.3 GiB) / 23.5 GiB of RAM = 78%.
  EXPECT_THAT(remedy, HasSubstr("sudo sysctl -w vm.overcommit_ratio=78 (now 50)"));
}

TEST(CheckMemoryCommit, AddressSpaceBelowImportTorchIsCritical) {
  FakeSyscalls syscalls;
  const Finding finding = run(fixture_context("ulimit_low", syscalls), CheckOptions{});
  EXPECT_EQ(finding.severity, Severity::kCritical);
  EXPECT_THAT(
      finding.summary,
      HasSubstr("address space limited to 600.0 MiB (ulimit -v 614400): below the 621.1 MiB "
                "that import torch alone maps"));
  EXPECT_EQ(evidence_text(finding, "address_space_limit_bytes"), "600.0 MiB");
  EXPECT_THAT(remedy_text(finding), HasSubstr("LimitAS=infinity"));
  EXPECT_THAT(remedy_text(finding), HasSubstr("ulimit -v unlimited"));
  EXPECT_THAT(remedy_text(finding), HasSubstr("h_vmem"));
}

TEST(CheckMemoryCommit, FiniteAddressSpaceWarnsAndIsCriticalWithGpus) {
  FakeSyscalls syscalls;
  const Context context = fixture_context("ulimit_v_16g", syscalls);
  const Finding cpu = run(context, CheckOptions{});
  EXPECT_EQ(cpu.severity, Severity::kWarn);
  EXPECT_THAT(cpu.summary, HasSubstr("address space limited to 16.0 GiB (ulimit -v 16777216)"));
  CheckOptions gpus;
  gpus.gpus = 1;
  const Finding gpu = run(context, gpus, RuntimeKind::kSlurm);
  EXPECT_EQ(gpu.severity, Severity::kCritical);
  EXPECT_THAT(gpu.summary, HasSubstr("with 1 GPU(s): below 64.0 GiB, CUDA cannot reserve"));
  EXPECT_THAT(remedy_text(gpu), HasSubstr("srun --propagate=AS"));
  EXPECT_THAT(remedy_text(gpu), HasSubstr("VSizeFactor"));
}

TEST(CheckMemoryCommit, DockerHasNoUlimitForTheAddressSpace) {
  FakeSyscalls syscalls;
  const Finding finding =
      run(fixture_context("ulimit_v_16g", syscalls), CheckOptions{}, RuntimeKind::kDocker);
  const std::string remedy = remedy_text(finding);
  EXPECT_THAT(remedy, HasSubstr("docker run has no --ulimit for this limit"));
  EXPECT_THAT(remedy, ::testing::Not(HasSubstr("--ulimit as=")));
}

TEST(CheckMemoryCommit, LowMaxMapCountWarnsAndTheWorstPartLeads) {
  FakeSyscalls syscalls;
  const testing::ScratchRoot root("overcommit_strict");
  std::ofstream(root.path() / "proc/sys/vm/max_map_count", std::ios::trunc) << "32768\n";
  const Finding ok_shape = run(root.context(syscalls), job(1, 256 * kMiB));
  EXPECT_EQ(ok_shape.severity, Severity::kWarn);
  EXPECT_THAT(ok_shape.summary,
              HasSubstr("vm.max_map_count is 32768, below the kernel's default 65530"));
  const Finding critical = run(root.context(syscalls), job(7, kGiB));
  EXPECT_EQ(critical.severity, Severity::kCritical);
  EXPECT_EQ(critical.summary.rfind("strict overcommit", 0), 0U) << critical.summary;
  EXPECT_THAT(critical.summary, HasSubstr("; vm.max_map_count is 32768"));
  EXPECT_THAT(remedy_text(critical), HasSubstr("sysctl -w vm.max_map_count=65530"));
}

TEST(CheckMemoryCommit, MissingSourcesAreListedAndAllMissingIsUnknown) {
  FakeSyscalls syscalls;
  // bare_host was recorded before the vm sysctls were: only the address space is known.
  const Finding partial = run(fixture_context("bare_host", syscalls), CheckOptions{});
  EXPECT_EQ(partial.severity, Severity::kOk);
  EXPECT_THAT(evidence_text(partial, "unreadable"), HasSubstr("overcommit_memory"));
  const testing::ScratchRoot empty;
  const Finding unknown = run(empty.context(syscalls), CheckOptions{});
  EXPECT_EQ(unknown.severity, Severity::kUnknown);
  EXPECT_THAT(unknown.reason, HasSubstr("limits"));
}

}  // namespace
}  // namespace headroom
