// shm.stale on a recorded tree (tests/fixtures/shm_stale_mixed): three
// processes hold /dev/shm files by fd, by a map whose fd was closed, and by a
// map of a file already unlinked; four files nobody holds are stale; one SysV
// segment has no attachments. statvfs comes from the fake to drive severity.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <map>
#include <variant>

#include "core/checks/check.h"
#include "core/clean/shm_survey.h"
#include "core/fixture_context.h"
#include "core/unique_fd.h"
#include "core/units.h"

namespace headroom {
namespace {

using testing::evidence_text;
using testing::FakeSyscalls;
using testing::fixture_context;
using testing::fixture_path;

constexpr std::string_view kScenario = "shm_stale_mixed";

// What a stale file takes from the tmpfs, from the fixture itself (block sizes differ by
// filesystem).
std::uint64_t allocated(std::string_view name) {
  struct stat info {};
  const auto path = fixture_path(kScenario) / "dev/shm" / std::string(name);
  EXPECT_EQ(::lstat(path.c_str(), &info), 0) << path;
  return static_cast<std::uint64_t>(info.st_blocks) * 512;
}

std::uint64_t stale_file_bytes() {
  return allocated("nccl-a1b2c3") + allocated("torch_3999_1111111_0") + allocated("sem.mp-q9z8") +
         allocated("notes.txt");
}

FsStats shm_fs(std::uint64_t total, std::uint64_t avail) {
  FsStats stats;
  stats.total_bytes = total;
  stats.free_bytes = avail;
  stats.avail_bytes = avail;
  stats.total_inodes = 1000;
  stats.free_inodes = 900;
  return stats;
}

Finding run(FsStats stats, const CheckOptions& options = {}) {
  FakeSyscalls syscalls;
  syscalls.set_fs(fixture_path(kScenario) / "dev/shm", stats);
  const Context context = fixture_context(kScenario, syscalls);
  const Runtime runtime = detect_runtime(context);
  auto findings = check_shm_stale(CheckInput{context, options, runtime});
  EXPECT_EQ(findings.size(), 1U);
  return findings.front();
}

// An unsigned evidence value as a number (evidence_text would round "32.0 KiB").
std::string number(const Finding& finding, std::string_view name) {
  for (const Evidence& item : finding.evidence) {
    if (item.name != name) continue;
    const auto* value = std::get_if<std::uint64_t>(&item.value);
    return value != nullptr ? std::to_string(*value) : "<not a count>";
  }
  return "<missing>";
}

TEST(ShmSurvey, HoldersComeFromFdsMapsAfterCloseAndNotFromNames) {
  FakeSyscalls syscalls;
  const Context context = fixture_context(kScenario, syscalls);
  const auto survey = survey_shm(context);
  ASSERT_TRUE(survey) << survey.error().message;
  std::map<std::string, std::vector<int>> holders;
  for (const ShmEntry& entry : survey->entries) holders[entry.name] = entry.holders;
  EXPECT_EQ(holders["torch_4100_1234567_0"], (std::vector<int>{4100}));  // fd 5 and a map
  EXPECT_EQ(holders["torch_4000_7654321_1"], (std::vector<int>{4101}));  // mapped after close
  EXPECT_EQ(holders["__KMP_REGISTERED_LIB_4102"], (std::vector<int>{4102}));
  EXPECT_TRUE(holders["torch_3999_1111111_0"].empty());  // its creator pid is gone: stale
  EXPECT_TRUE(holders["nccl-a1b2c3"].empty());
  ASSERT_EQ(survey->unlinked.size(), 1U);
  EXPECT_EQ(survey->unlinked[0].path, "/dev/shm/torch_4101_2222222_3");
  EXPECT_EQ(survey->unlinked[0].size_bytes,
            2 * kMiB);  // the mapped length (no map_files in a tree)
  EXPECT_EQ(survey->unlinked[0].holders, (std::vector<int>{4101}));
  EXPECT_EQ(survey->index.processes_scanned(), 3U);
  EXPECT_TRUE(survey->index.unreadable_pids().empty());
}

TEST(CheckShmStale, CountsStaleFilesSysvAndUnlinkedBytes) {
  const Finding finding = run(shm_fs(64 * kMiB, 60 * kMiB));
  EXPECT_EQ(evidence_text(finding, "stale_files"), "4");
  EXPECT_EQ(number(finding, "stale_bytes"), std::to_string(stale_file_bytes()));
  EXPECT_EQ(number(finding, "stale_nccl_bytes"), std::to_string(allocated("nccl-a1b2c3")));
  EXPECT_EQ(number(finding, "stale_torch_bytes"),
            std::to_string(allocated("torch_3999_1111111_0")));
  EXPECT_EQ(number(finding, "stale_other_bytes"), std::to_string(allocated("notes.txt")));
  EXPECT_EQ(evidence_text(finding, "sysv_stale_segments"), "1");
  EXPECT_EQ(number(finding, "sysv_stale_bytes"), "65536");
  EXPECT_EQ(evidence_text(finding, "unlinked_held_segments"), "1");
  EXPECT_EQ(number(finding, "unlinked_held_bytes"), std::to_string(2 * kMiB));
  EXPECT_EQ(evidence_text(finding, "unlinked_held_by_pids"), "4101");
  EXPECT_NE(finding.summary.find("5 stale segments"), std::string::npos) << finding.summary;
  EXPECT_NE(finding.summary.find("1 of them SysV"), std::string::npos) << finding.summary;
  EXPECT_NE(finding.summary.find("still held by pid 4101"), std::string::npos) << finding.summary;
}

TEST(CheckShmStale, AnotherReaderOfTheFixtureDoesNotChangeTheAnswer) {
  // Tests run side by side over one fixture tree; another test's lease probe holds the
  // files open for a moment. The kernel's lease answer comes from the fake, so the
  // recorded tree alone decides (CI failed once when the real kernel was asked).
  std::vector<UniqueFd> held;
  for (const char* name : {"nccl-a1b2c3", "torch_3999_1111111_0", "sem.mp-q9z8", "notes.txt"}) {
    const auto path = fixture_path(kScenario) / "dev/shm" / name;
    held.emplace_back(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    ASSERT_TRUE(held.back().ok()) << path;
  }
  const Finding finding = run(shm_fs(64 * kMiB, 60 * kMiB));
  EXPECT_EQ(evidence_text(finding, "stale_files"), "4") << finding.summary;
}

TEST(CheckShmStale, SmallShareOfALargeShmIsOk) {
  // ~96 KiB stale is under 1 MiB and under 5% of 64 MiB: reported, not a warning.
  const Finding finding = run(shm_fs(64 * kMiB, 60 * kMiB));
  EXPECT_EQ(finding.severity, Severity::kOk) << finding.summary;
}

TEST(CheckShmStale, FivePercentOfASmallShmWarnsWithTheCleanCommand) {
  const Finding finding = run(shm_fs(kMiB, 900 * kKiB));
  EXPECT_EQ(finding.severity, Severity::kWarn) << finding.summary;
  ASSERT_FALSE(finding.remedy.empty());
  EXPECT_NE(finding.remedy[0].find("headroom clean --shm"), std::string::npos) << finding.remedy[0];
  ASSERT_EQ(finding.remedy.size(), 2U);  // notes.txt has no known producer
  EXPECT_NE(finding.remedy[1].find("remove them by hand"), std::string::npos) << finding.remedy[1];
}

TEST(CheckShmStale, CriticalWhenStaleFilesPushItOverTheThreshold) {
  // 98% used; without the stale files it would be below 95%.
  const Finding finding = run(shm_fs(512 * kKiB, 8 * kKiB));
  EXPECT_EQ(finding.severity, Severity::kCritical) << finding.summary;
  EXPECT_NE(finding.summary.find("without them"), std::string::npos) << finding.summary;
}

TEST(CheckShmStale, CriticalWhenTheJobWouldNotFit) {
  CheckOptions options;
  options.workers = 4;
  options.batch_bytes = kMiB;  // (4 x 2 + 2) x 1 MiB + semaphores = 10.1 MiB
  const Finding finding = run(shm_fs(1536 * kKiB, kMiB), options);
  EXPECT_EQ(finding.severity, Severity::kCritical) << finding.summary;
  EXPECT_NE(finding.summary.find("the job needs 10.1 MiB"), std::string::npos) << finding.summary;
}

TEST(CheckShmStale, ReadsProcOnlyWhenTheKernelCannotAnswerForEverySegment) {
  // The kernel's lease for every file, and no space outside the listed files: no scan.
  const auto with = [](LeaseAnswer lease, FsStats stats) {
    FakeSyscalls syscalls;
    syscalls.lease_ = lease;
    syscalls.set_fs(fixture_path(kScenario) / "dev/shm", stats);
    const Context context = fixture_context(kScenario, syscalls);
    auto findings = check_shm_stale(CheckInput{context, {}, detect_runtime(context)});
    EXPECT_EQ(findings.size(), 1U);
    return findings.front();
  };
  const Finding answered = with(LeaseAnswer::kInUse, shm_fs(64 * kMiB, 64 * kMiB));
  EXPECT_EQ(evidence_text(answered, "holders_from"), "lease");
  EXPECT_EQ(evidence_text(answered, "processes_scanned"), "0");
  EXPECT_EQ(evidence_text(answered, "stale_files"), "0");  // every one refused the lease
  EXPECT_EQ(evidence_text(with(LeaseAnswer::kUnused, shm_fs(64 * kMiB, 64 * kMiB)), "stale_files"),
            "7");  // every regular entry of the tree, granted
  // No answer for a file (leases off, another user's file unprivileged): the scan decides.
  const Finding unanswered = with(LeaseAnswer::kUnknown, shm_fs(64 * kMiB, 64 * kMiB));
  EXPECT_EQ(evidence_text(unanswered, "holders_from"), "proc");
  EXPECT_EQ(evidence_text(unanswered, "processes_scanned"), "3");
  // (the tree's own visibility is incomplete: without a lease nothing unheld is proven unused)
  EXPECT_EQ(evidence_text(unanswered, "unknown_files"), "4");
  // Used space no listed file holds (the unlinked mapped segment): only the scan names it.
  const Finding unexplained = with(LeaseAnswer::kInUse, shm_fs(64 * kMiB, 60 * kMiB));
  EXPECT_EQ(evidence_text(unexplained, "holders_from"), "proc");
  EXPECT_EQ(evidence_text(unexplained, "unlinked_held_segments"), "1");
}

}  // namespace
}  // namespace headroom
