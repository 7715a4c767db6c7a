#include "core/signatures/analyzer.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/signatures/analyze.h"

namespace headroom {
namespace {

using testing::analyze_text;
using testing::verdict_cause;

const char kOomLog[] =
    "step 1\n"
    "RuntimeError: DataLoader worker (pid 51022) is killed by signal: Killed. \n"
    "RuntimeError: DataLoader worker (pid(s) 51022) exited unexpectedly\n"
    "[1209331.551301] Out of memory: Killed process 51022 (python) total-vm:38471200kB\n";

TEST(LogAnalyzer, SameDiagnosisWhateverTheChunking) {
  const Diagnosis whole = analyze_text(kOomLog);
  for (std::size_t chunk : {1U, 2U, 3U, 7U, 64U}) {
    const Diagnosis pieces = analyze_text(kOomLog, chunk);
    ASSERT_EQ(verdict_cause(pieces), "host_oom") << chunk;
    ASSERT_EQ(pieces.evidence.size(), whole.evidence.size()) << chunk;
    for (std::size_t i = 0; i < whole.evidence.size(); ++i) {
      EXPECT_EQ(pieces.evidence[i].line, whole.evidence[i].line) << chunk;
      EXPECT_EQ(pieces.evidence[i].signature, whole.evidence[i].signature) << chunk;
    }
    EXPECT_EQ(pieces.lines, 4U);
  }
}

TEST(LogAnalyzer, WorkerSigkillPlusKernelKillOfThatPidIsHighConfidenceHostOom) {
  const Diagnosis diagnosis = analyze_text(kOomLog);
  ASSERT_NE(diagnosis.verdict(), nullptr);
  EXPECT_EQ(diagnosis.verdict()->cause, "host_oom");
  EXPECT_EQ(diagnosis.verdict()->confidence, Confidence::kHigh);
  EXPECT_EQ(diagnosis.fields.pids, std::vector<std::int64_t>{51022});
  EXPECT_EQ(diagnosis.fields.killed_pids, std::vector<std::int64_t>{51022});
  const auto& reasoning = diagnosis.verdict()->reasoning;
  EXPECT_TRUE(std::any_of(reasoning.begin(), reasoning.end(), [](const std::string& step) {
    return step.find("pid 51022 died of SIGKILL") != std::string::npos;
  }));
}

TEST(LogAnalyzer, WorkerSigkillAloneIsMediumConfidenceHostOom) {
  const Diagnosis diagnosis =
      analyze_text("RuntimeError: DataLoader worker (pid 7) is killed by signal: Killed. \n");
  ASSERT_NE(diagnosis.verdict(), nullptr);
  EXPECT_EQ(diagnosis.verdict()->cause, "host_oom");
  EXPECT_EQ(diagnosis.verdict()->confidence, Confidence::kMedium);
}

TEST(LogAnalyzer, EvidenceHasLineNumbersAcrossCrlfAnsiAndTqdm) {
  const std::string log =
      "a\r\n"
      " 10%|#  | 1/10\r 20%|## | 2/10\x1b[31mERROR: Unexpected bus error encountered in worker. "
      "This might be "
      "caused by insufficient shared memory (shm).\x1b[0m\r\n" +
      std::string(1, '\0') + "c\r\n";
  const Diagnosis diagnosis = analyze_text(log);
  ASSERT_EQ(verdict_cause(diagnosis), "shm_too_small");
  ASSERT_EQ(diagnosis.evidence.size(), 1U);
  EXPECT_EQ(diagnosis.evidence[0].line, 2U);
  EXPECT_NE(diagnosis.evidence[0].text.find("ERROR: Unexpected bus error"), std::string::npos);
  EXPECT_EQ(diagnosis.evidence[0].text.find('\x1b'), std::string::npos);
}

TEST(LogAnalyzer, LongLinesAreBoundedAndLaterLinesStillCount) {
  std::string log(5'000'000, 'x');  // a 5 MB line without a newline in the first chunks
  log += "\nOSError: [Errno 24] Too many open files\n";
  const Diagnosis diagnosis = analyze_text(log, 1 << 16);
  ASSERT_EQ(verdict_cause(diagnosis), "fd_limit");
  EXPECT_EQ(diagnosis.evidence.front().line, 2U);
  EXPECT_EQ(diagnosis.lines, 2U);
  EXPECT_EQ(diagnosis.bytes, log.size());
}

TEST(LogAnalyzer, EvidenceStaysBoundedWhenAMessageRepeats) {
  std::string log;
  for (int i = 0; i < 20000; ++i) log += "OSError: [Errno 24] Too many open files\n";
  const Diagnosis diagnosis = analyze_text(log);
  ASSERT_NE(diagnosis.verdict(), nullptr);
  EXPECT_EQ(diagnosis.verdict()->matches, 20000U);
  EXPECT_LE(diagnosis.evidence.size(), 3U);
}

TEST(LogAnalyzer, EnospcIsTmpFullOrDiskFullByPathAndContext) {
  EXPECT_EQ(
      verdict_cause(analyze_text("OSError: [Errno 28] No space left on device: '/tmp/pymp-abc'\n")),
      "tmp_full");
  EXPECT_EQ(
      verdict_cause(analyze_text("OSError: [Errno 28] No space left on device: '/ckpt/a.pt'\n")),
      "disk_full");
  EXPECT_EQ(
      verdict_cause(analyze_text("OSError: [Errno 28] No space left on device: '/dev/shm/x'\n")),
      "shm_too_small");
  EXPECT_EQ(verdict_cause(
                analyze_text("  File \"/usr/lib/python3.11/tempfile.py\", line 368, in mkdtemp\n"
                             "OSError: [Errno 28] No space left on device\n")),
            "tmp_full");
}

TEST(LogAnalyzer, CudaOutOfMemoryIsNeverTheHost) {
  const Diagnosis diagnosis = analyze_text(
      "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 23.69 "
      "GiB total)\n"
      "RuntimeError: DataLoader worker (pid(s) 12) exited unexpectedly\n");
  EXPECT_EQ(verdict_cause(diagnosis), "gpu_oom");
}

TEST(LogAnalyzer, KeepsSourcesApartAndNumbersLinesPerSource) {
  LogAnalyzer analyzer(testing::builtin_compiled());
  analyzer.begin_source("job.log");
  analyzer.feed("one\nRuntimeError: DataLoader worker (pid 9) is killed by signal: Killed. \n");
  analyzer.begin_source("dmesg.log");
  analyzer.feed("Memory cgroup out of memory: Killed process 9 (python3)\n");
  const Diagnosis diagnosis = analyzer.finish();
  ASSERT_EQ(diagnosis.evidence.size(),
            2U);  // the worker line, and the kernel line (two signatures, one evidence line)
  EXPECT_EQ(diagnosis.evidence[0].source, "job.log");
  EXPECT_EQ(diagnosis.evidence[0].line, 2U);
  EXPECT_EQ(diagnosis.evidence[1].source, "dmesg.log");
  EXPECT_EQ(diagnosis.evidence[1].line, 1U);
  EXPECT_EQ(diagnosis.lines, 3U);
  EXPECT_EQ(diagnosis.verdict()->confidence, Confidence::kHigh);
}

TEST(LogAnalyzer, ExitStatusFromTheCallerCounts) {
  LogAnalyzer analyzer(testing::builtin_compiled());
  analyzer.feed("training...\n");
  analyzer.note_exit(137, 9);
  const Diagnosis diagnosis = analyzer.finish();
  EXPECT_EQ(verdict_cause(diagnosis), "host_oom");
  EXPECT_EQ(diagnosis.verdict()->confidence, Confidence::kMedium);
}

// headroom's own save_checkpoint raises DiskFull (DiskFullError since PEP 8 naming): its
// line names the checkpoint, so the verdict is certain and placed by that path.
TEST(LogAnalyzer, HeadroomsOwnDiskFullIsACertainDiskFullAtItsPath) {
  for (const char* line :
       {"headroom.DiskFull: [Errno 28] not enough space for the checkpoint: 2.0 MiB free in "
        "/ckpt, need 5.2 MiB (expected 4.0 MiB + margin); nothing was written, the previous "
        "checkpoints are intact: '/ckpt/step_000100.pt'\n",
        "headroom.checkpoint.DiskFullError: [Errno 28] the disk filled while writing the "
        "checkpoint (0 B free in /ckpt); the partial file was removed, nothing else was "
        "removed, the previous complete checkpoints are intact: '/ckpt/step_000150.pt'\n"}) {
    const Diagnosis diagnosis = analyze_text(line);
    ASSERT_NE(diagnosis.verdict(), nullptr) << line;
    EXPECT_EQ(diagnosis.verdict()->cause, "disk_full") << line;
    EXPECT_EQ(diagnosis.verdict()->confidence, Confidence::kHigh) << line;
    ASSERT_FALSE(diagnosis.fields.paths.empty()) << line;
    EXPECT_EQ(diagnosis.fields.paths.front().rfind("/ckpt/step_000", 0), 0u) << line;
  }
  // A checkpoint saved into /dev/shm is shared memory running out, not the disk.
  EXPECT_EQ(verdict_cause(analyze_text(
                "headroom.DiskFull: [Errno 28] not enough space for the checkpoint: 1.0 MiB free "
                "in /dev/shm, need 5.2 MiB; nothing was written: '/dev/shm/step_000100.pt'\n")),
            "shm_too_small");
}

TEST(LogAnalyzer, NothingKnownGivesNoVerdict) {
  EXPECT_EQ(analyze_text("").verdict(), nullptr);
  EXPECT_EQ(analyze_text("epoch 1 loss 0.3\nall good\n").verdict(), nullptr);
}

// NCCL timeouts and "Caught X in DataLoader worker" wrap another failure: the
// cause a strong line names leads, whichever comes first in the log; a stop by
// the scheduler does not take the lead from a hung collective.
TEST(LogAnalyzer, WrapperCausesYieldToTheFailureTheyWrap) {
  const std::string timeout =
      "[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective operation timeout: "
      "WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
      "600051 milliseconds "
      "before timing out.\n";
  const std::string dataset = "RuntimeError: Caught RuntimeError in DataLoader worker process 6.\n";
  const std::string sigkill = "  exitcode  : -9 (pid: 5123)\n";
  const std::string allocator =
      "RuntimeError: [enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator: not enough "
      "memory: "
      "you tried to allocate 25769803776 bytes.\n";
  const std::string cancelled =
      "slurmstepd: error: *** JOB 5 ON gpu-r07 CANCELLED AT 2024-04-11T06:00:14 DUE TO TIME LIMIT "
      "***\n";
  EXPECT_EQ(verdict_cause(analyze_text(timeout + sigkill)), "host_oom");
  EXPECT_EQ(verdict_cause(analyze_text(sigkill + timeout)), "host_oom");
  EXPECT_EQ(verdict_cause(analyze_text(timeout + dataset)), "dataset_code");
  EXPECT_EQ(verdict_cause(analyze_text(dataset + timeout)), "dataset_code");
  EXPECT_EQ(verdict_cause(analyze_text(dataset + allocator)), "host_oom");
  EXPECT_EQ(verdict_cause(analyze_text(timeout + cancelled)), "nccl_network");
}

// "exited unexpectedly" alone says where to look; once "killed by signal:
// Killed" names the cause, only the fixes of that cause remain.
TEST(LogAnalyzer, SuggestiveRemediesOnlyWithoutAFirmerLine) {
  const auto mentions_dmesg = [](const Diagnosis& diagnosis) {
    return std::any_of(
        diagnosis.remedies.begin(), diagnosis.remedies.end(),
        [](const std::string& remedy) { return remedy.find("dmesg") != std::string::npos; });
  };
  const Diagnosis alone =
      analyze_text("RuntimeError: DataLoader worker (pid(s) 4021) exited unexpectedly\n");
  ASSERT_EQ(verdict_cause(alone), "host_oom");
  EXPECT_TRUE(mentions_dmesg(alone));
  const Diagnosis firm = analyze_text(kOomLog);
  ASSERT_EQ(verdict_cause(firm), "host_oom");
  EXPECT_FALSE(firm.remedies.empty());
  EXPECT_FALSE(mentions_dmesg(firm));
}

}  // namespace
}  // namespace headroom
