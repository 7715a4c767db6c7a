// Every log of the project's corpus (tests/logs/<expected cause>/*.log) and, when
// it is present beside the clone, of the shared corpus of real PyTorch 1.13
// failures (../shared/corpus/logs) gets its cause.

#include <gtest/gtest.h>

#include <map>

#include "core/signatures/analyze.h"

namespace headroom {
namespace {

using testing::analyze_files;
using testing::verdict_cause;

TEST(TestCorpus, EveryLogGetsTheCauseOfItsDirectory) {
  int checked = 0;
  for (const auto& entry :
       std::filesystem::recursive_directory_iterator(std::string(HEADROOM_TEST_DATA) + "/logs")) {
    if (!entry.is_regular_file()) continue;
    const std::string expected = entry.path().parent_path().filename().string();
    EXPECT_EQ(verdict_cause(analyze_files({entry.path()})), expected) << entry.path();
    ++checked;
  }
  EXPECT_GE(checked, 50);
}

std::filesystem::path shared_corpus() {
  return std::filesystem::path(HEADROOM_TEST_DATA).parent_path().parent_path() / "shared" /
         "corpus" / "logs";
}

TEST(SharedCorpus, EveryJobLogGetsItsCause) {
  const std::filesystem::path root = shared_corpus();
  if (!std::filesystem::is_directory(root)) GTEST_SKIP() << "no shared corpus at " << root;
  // The job logs of each scenario (harness.log, result.txt and the /dev/shm
  // listings are the harness's notes, not output of the job).
  const std::map<std::string, std::string> expected = {
      {"shm_small/job.log", "shm_too_small"},
      {"shm_absent_or_readonly/job-tiny.log", "shm_too_small"},
      {"shm_absent_or_readonly/job-readonly.log", "shm_too_small"},
      {"shm_absent_or_readonly/job-absent.log", "shm_too_small"},
      {"shm_absent_or_readonly/job-noperm.log", "shm_too_small"},
      {"shm_absent_or_readonly/share-tiny.log", "shm_too_small"},
      {"shm_absent_or_readonly/share-readonly.log", "shm_too_small"},
      {"shm_absent_or_readonly/share-absent.log", "shm_too_small"},
      {"shm_absent_or_readonly/share-noperm.log", "shm_too_small"},
      {"tmp_full/job-nofallback.log", "tmp_full"},
      {"tmp_full/manager-nofallback.log", "tmp_full"},
      {"tmp_full/job-pinned_full.log", "tmp_full"},
      {"tmp_full/job-pinned_notwritable.log", "tmp_full"},
      {"tmp_full/job-cleaned.log", "tmp_full"},
      {"tmp_full/job-fallback.log", "none"},  // the job succeeded: /var/tmp was used
      {"disk_full_checkpoint/train-path.log", "disk_full"},
      {"disk_full_checkpoint/train-fileobj.log", "disk_full"},
      {"disk_full_checkpoint/train-legacy.log", "disk_full"},
      {"disk_full_checkpoint/resume-path.log", "disk_full"},
      {"disk_full_checkpoint/resume-fileobj.log", "disk_full"},
      {"disk_full_checkpoint/resume-legacy.log", "disk_full"},
      {"host_oom_worker/job.log", "host_oom"},
      {"fd_limit/keep_batches.log", "fd_limit"},
      {"fd_limit/queue_consumer.log", "fd_limit"},
      {"fd_limit/many_tensors.log", "fd_limit"},
      // From the log alone /dev/shm ran out; that stale segments filled it is
      // for the host check (HostConfirmation test below and test_explain_host.py).
      {"stale_shm/next_job.log", "shm_too_small"},
  };
  for (const auto& [file, cause] : expected) {
    const std::filesystem::path path = root / file;
    if (!std::filesystem::exists(path)) {
      ADD_FAILURE() << "missing " << path;
      continue;
    }
    EXPECT_EQ(verdict_cause(analyze_files({path})), cause) << file;
  }
  // The job's log with the kernel's: the pid in both makes it certain.
  const Diagnosis oom =
      analyze_files({root / "host_oom_worker/job.log", root / "host_oom_worker/dmesg.log"});
  ASSERT_EQ(verdict_cause(oom), "host_oom");
  EXPECT_EQ(oom.verdict()->confidence, Confidence::kHigh);
  EXPECT_FALSE(oom.fields.killed_pids.empty());
}

}  // namespace
}  // namespace headroom
