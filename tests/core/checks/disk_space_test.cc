// disk.space on the recorded disk_small_ckpt tree (a 64 MiB tmpfs on
// /mnt/ckpt) with statvfs answers from the fake.
#include <gtest/gtest.h>

#include "core/checks/check.h"
#include "core/scratch_root.h"
#include "core/units.h"

namespace headroom {
namespace {

using testing::evidence_text;
using testing::FakeSyscalls;
using testing::fixture_context;
using testing::fixture_path;
using testing::fs_stats;

struct DiskRun {
  DiskRun() { options.dirs = {"/mnt/ckpt"}; }
  Finding run(FsStats stats, RuntimeKind kind = RuntimeKind::kHost) {
    syscalls.set_fs(fixture_path("disk_small_ckpt") / "mnt/ckpt", stats);
    const Context context = fixture_context("disk_small_ckpt", syscalls);
    Runtime runtime;
    runtime.kind = kind;
    auto findings = check_disk_space(CheckInput{context, options, runtime});
    EXPECT_EQ(findings.size(), 1U);
    return findings.front();
  }
  FakeSyscalls syscalls;
  CheckOptions options;
};

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  return text;
}

TEST(CheckDiskSpace, RoomyFilesystemIsOkAndNamesTheMount) {
  DiskRun job;
  const Finding finding = job.run(fs_stats(64 * kMiB, 60 * kMiB));
  EXPECT_EQ(finding.id, "disk.space");
  EXPECT_EQ(finding.subject, "/mnt/ckpt");
  EXPECT_EQ(finding.severity, Severity::kOk);
  EXPECT_EQ(finding.summary,
            "/mnt/ckpt: 60.0 MiB free of 64.0 MiB (6.2% used) on /mnt/ckpt (tmpfs)");
  EXPECT_EQ(evidence_text(finding, "fstype"), "tmpfs");
  EXPECT_EQ(evidence_text(finding, "read_only"), "no");
  EXPECT_TRUE(finding.remedy.empty());
}

TEST(CheckDiskSpace, UsePercentCrossesWarnThenCritical) {
  DiskRun job;
  EXPECT_EQ(job.run(fs_stats(64 * kMiB, 8 * kMiB)).severity, Severity::kWarn);  // 87.5%
  const Finding critical = job.run(fs_stats(64 * kMiB, 2 * kMiB));              // 96.9%
  EXPECT_EQ(critical.severity, Severity::kCritical);
  EXPECT_NE(critical.summary.find("96.9% used, only 2.0 MiB free"), std::string::npos)
      << critical.summary;
  EXPECT_NE(joined(critical.remedy).find("headroom du /mnt/ckpt"), std::string::npos);
  job.options.warn_percent = 90;
  EXPECT_EQ(job.run(fs_stats(64 * kMiB, 8 * kMiB)).severity, Severity::kOk);
}

TEST(CheckDiskSpace, CheckpointsRunOutAfterTheSavesThatFit) {
  DiskRun job;
  job.options.checkpoint_bytes = 16 * kMiB;
  job.options.keep = 4;  // no series on disk yet: saves 1 and 2 fit, save 3 does not
  const Finding finding = job.run(fs_stats(64 * kMiB, 40 * kMiB));
  EXPECT_EQ(finding.severity, Severity::kWarn) << finding.summary;
  EXPECT_NE(finding.summary.find("room for 2 more checkpoint(s) of 16.0 MiB (40.0 MiB free, "
                                 "keeping 4), then save 3 fails"),
            std::string::npos)
      << finding.summary;
  EXPECT_EQ(evidence_text(finding, "saves_that_fit"), "2");
  EXPECT_EQ(evidence_text(finding, "steady_state_need_bytes"), "80.0 MiB");
  const std::string remedies = joined(finding.remedy);
  EXPECT_NE(remedies.find("headroom prune /mnt/ckpt --keep-last 4"), std::string::npos) << remedies;
  EXPECT_NE(remedies.find("--keep 1"), std::string::npos) << remedies;
}

TEST(CheckDiskSpace, ASteadyStateThatFitsOnlyByDeletingFirstWarns) {
  // keep 2 of 16 MiB in 40 MiB: the third save fits once the first is deleted before it,
  // as save_checkpoint does; a torch.save followed by deletion needs 3 x 16 MiB.
  DiskRun job;
  job.options.checkpoint_bytes = 16 * kMiB;
  job.options.keep = 2;
  const Finding finding = job.run(fs_stats(64 * kMiB, 40 * kMiB));
  EXPECT_EQ(finding.severity, Severity::kWarn) << finding.summary;
  EXPECT_NE(finding.summary.find("only because the oldest is deleted before each save"),
            std::string::npos)
      << finding.summary;
  EXPECT_EQ(evidence_text(finding, "steady_state_need_bytes"), "48.0 MiB");
  EXPECT_NE(joined(finding.remedy).find("headroom.save_checkpoint"), std::string::npos);
}

TEST(CheckDiskSpace, NextCheckpointThatDoesNotFitIsCritical) {
  DiskRun job;
  job.options.checkpoint_bytes = 16 * kMiB;
  const Finding finding = job.run(fs_stats(64 * kMiB, 10 * kMiB));
  EXPECT_EQ(finding.severity, Severity::kCritical);
  EXPECT_NE(finding.summary.find(
                "the next checkpoint (16.0 MiB, 17.8 MiB with margin) does not fit: 10.0 MiB free"),
            std::string::npos)
      << finding.summary;
  EXPECT_EQ(evidence_text(finding, "saves_that_fit"), "0");
}

TEST(CheckDiskSpace, SteadyStateThatFitsIsOk) {
  DiskRun job;
  job.options.checkpoint_bytes = 16 * kMiB;
  job.options.keep = 2;
  const Finding finding = job.run(fs_stats(64 * kMiB, 56 * kMiB));
  EXPECT_EQ(finding.severity, Severity::kOk) << finding.summary;
  EXPECT_EQ(evidence_text(finding, "saves_that_fit"), "3");
}

TEST(CheckDiskSpace, ReadOnlyMountIsCritical) {
  DiskRun job;
  FsStats stats = fs_stats(64 * kMiB, 60 * kMiB);
  stats.read_only = true;
  const Finding finding = job.run(stats);
  EXPECT_EQ(finding.severity, Severity::kCritical);
  EXPECT_NE(finding.summary.find("read-only mount on /mnt/ckpt (tmpfs)"), std::string::npos)
      << finding.summary;
  EXPECT_NE(joined(finding.remedy).find("mount -o remount,rw /mnt/ckpt"), std::string::npos);
  EXPECT_NE(joined(job.run(stats, RuntimeKind::kDocker).remedy).find("docker run -v"),
            std::string::npos);
}

TEST(CheckDiskSpace, InodesRunOutBeforeBytes) {
  DiskRun job;
  const Finding finding = job.run(fs_stats(64 * kMiB, 60 * kMiB, 1000, 10));
  EXPECT_EQ(finding.severity, Severity::kCritical);
  EXPECT_NE(finding.summary.find("99.0% of inodes used, 10 free"), std::string::npos)
      << finding.summary;
}

TEST(CheckDiskSpace, UnmeasurableDirIsUnknownWithTheReason) {
  FakeSyscalls syscalls;  // knows no filesystem
  const Context context = fixture_context("disk_small_ckpt", syscalls);
  CheckOptions options;
  options.dirs = {"/mnt/ckpt", "/mnt/ckpt/", "/data"};
  const Runtime runtime;
  const auto findings = check_disk_space(CheckInput{context, options, runtime});
  ASSERT_EQ(findings.size(), 2U);  // the duplicate dir is checked once
  EXPECT_EQ(findings[0].severity, Severity::kUnknown);
  EXPECT_NE(findings[0].reason.find("no fake filesystem"), std::string::npos);
  EXPECT_EQ(findings[1].subject, "/data");
}

}  // namespace
}  // namespace headroom
