// job.shape (issue 16): --workers 64 on a 4-CPU host, or --gpus 8 where no GPU is visible,
// is said with what was seen, not sized for. Fixture pids_nproc_v2: Cpus_allowed_list 0-3,
// no NVIDIA driver, no /dev/nvidiaN.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/checks/check.h"
#include "core/fixture_context.h"
#include "core/scratch_root.h"

namespace headroom {
namespace {

using testing::evidence_text;
using testing::FakeSyscalls;

std::vector<Finding> run(const Context& context, std::uint64_t workers, std::uint64_t gpus,
                         std::uint64_t ranks = 1) {
  CheckOptions options;
  options.workers = workers;
  options.gpus = gpus;
  options.ranks = ranks;
  const Runtime runtime;
  return check_job_shape(CheckInput{context, options, runtime});
}

TEST(CheckJobShape, MoreWorkersThanCpusWarnsWithTheCpusSeen) {
  FakeSyscalls syscalls;
  const Context context = testing::fixture_context("pids_nproc_v2", syscalls);
  const auto findings = run(context, 64, 0);
  ASSERT_EQ(findings.size(), 1U);
  const Finding& finding = findings.front();
  EXPECT_EQ(finding.id, "job.shape");
  EXPECT_EQ(finding.severity, Severity::kWarn);
  EXPECT_EQ(finding.summary,
            "the job's shape does not fit this host: 64 DataLoader workers (1 rank x --workers "
            "64) on 4 CPUs");
  EXPECT_EQ(evidence_text(finding, "cpus_allowed"), "4");
  ASSERT_FALSE(finding.remedy.empty());
  EXPECT_NE(finding.remedy.front().find("at most 4 per rank"), std::string::npos);
  // Two ranks of 2 workers: 4 workers on 4 CPUs fit.
  EXPECT_EQ(run(context, 2, 0, 2).front().severity, Severity::kOk);
}

TEST(CheckJobShape, GpusThatAreNotThereWarn) {
  FakeSyscalls syscalls;
  const Context context = testing::fixture_context("pids_nproc_v2", syscalls);
  const auto findings = run(context, 0, 8);
  ASSERT_EQ(findings.size(), 1U);
  EXPECT_EQ(findings.front().severity, Severity::kWarn);
  EXPECT_NE(findings.front().summary.find("--gpus 8 but 0 GPUs are visible"), std::string::npos)
      << findings.front().summary;
  EXPECT_EQ(evidence_text(findings.front(), "gpus_seen"), "0");
}

TEST(CheckJobShape, TheGpusTheDriverListsFit) {
  testing::ScratchRoot root("pids_nproc_v2");
  for (const char* address : {"0000:01:00.0", "0000:41:00.0"}) {
    std::filesystem::create_directories(root.path() / "proc/driver/nvidia/gpus" / address);
  }
  FakeSyscalls syscalls;
  const Context context = root.context(syscalls);
  const auto findings = run(context, 2, 2);
  ASSERT_EQ(findings.size(), 1U);
  EXPECT_EQ(findings.front().severity, Severity::kOk) << findings.front().summary;
  EXPECT_EQ(findings.front().summary,
            "the job's shape fits this host: 2 workers on 4 CPUs, 2 of 2 GPUs");
  EXPECT_EQ(evidence_text(findings.front(), "gpus_source"), "/proc/driver/nvidia/gpus");
  // Three wanted, two there: named.
  EXPECT_NE(run(context, 0, 3).front().summary.find("--gpus 3 but 2 GPUs are visible"),
            std::string::npos);
}

TEST(CheckJobShape, NoShapeGivenIsNoFinding) {
  FakeSyscalls syscalls;
  const Context context = testing::fixture_context("pids_nproc_v2", syscalls);
  EXPECT_TRUE(run(context, 0, 0).empty());
}

}  // namespace
}  // namespace headroom
