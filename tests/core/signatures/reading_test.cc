// How explain reads what a paste and a report do to a message: lines wrapped mid-phrase,
// an error that says that space ran out but not where, a death reported by whoever saw it,
// and the rules that read two causes together (tests/logs/ has whole logs of each).

#include <gtest/gtest.h>

#include <string>

#include "core/signatures/analyze.h"

namespace headroom {
namespace {

using testing::analyze_text;
using testing::verdict_cause;

Confidence confidence(const Diagnosis& diagnosis) {
  return diagnosis.verdict() != nullptr ? diagnosis.verdict()->confidence : Confidence::kLow;
}

TEST(WrappedLines, AMessageSplitByTheLineBreakIsReadJoined) {
  // Between words, in the middle of a word, and with the continuation indented.
  EXPECT_EQ(verdict_cause(analyze_text("socket.accept: Too\nmany open files\n")), "fd_limit");
  EXPECT_EQ(verdict_cause(analyze_text("ERROR: Unexpected bus error encountered in worker. This "
                                       "might be caused by insufficient shar\ned memory (shm).\n")),
            "shm_too_small");
  EXPECT_EQ(verdict_cause(analyze_text("RuntimeError: DataLoader worker (pid 7) is killed by "
                                       "signal: Bus\n    error.\n")),
            "shm_too_small");
  // The evidence names the line where the message starts.
  const Diagnosis wrapped = analyze_text(
      "step 9\nthread creation failed: Resource temporarily\n"
      "unavailable\n");
  ASSERT_EQ(verdict_cause(wrapped), "pid_limit");
  ASSERT_FALSE(wrapped.evidence.empty());
  EXPECT_EQ(wrapped.evidence.front().line, 2U);
}

TEST(WrappedLines, OnlyAMatchAcrossTheBreakCounts) {
  // "Killed" ends one line and the next starts with two spaces: joined, bash's job
  // line would match, but nothing of it crosses a real break of one message.
  EXPECT_EQ(verdict_cause(analyze_text("loss went up, the run got killed\n  by me, restarting\n")),
            "none");
  // Each line matched on its own is not counted again joined.
  const Diagnosis twice = analyze_text(
      "OSError: [Errno 24] Too many open files\n"
      "OSError: [Errno 24] Too many open files\n");
  EXPECT_EQ(twice.verdict()->matches, 2U);
}

TEST(WrappedLines, OnlyTheHeadOfALongLogIsJoined) {
  // Programs do not wrap their own logs: past the first MiB lines are read alone.
  std::string log;
  while (log.size() < 1100 * 1024) log += "step 1 loss 0.5 lr 1e-4 tokens/s 12000\n";
  const std::string wrapped = "accept failed: Too\nmany open files\n";
  EXPECT_EQ(verdict_cause(analyze_text(log + wrapped)), "none");
  EXPECT_EQ(verdict_cause(analyze_text(wrapped + log)), "fd_limit");
}

TEST(LocatedErrors, ThePathDecidesAndIsDecisive) {
  const Diagnosis tmp = analyze_text("OSError: [Errno 28] No space left on device: '/tmp/x/y'\n");
  EXPECT_EQ(verdict_cause(tmp), "tmp_full");
  EXPECT_EQ(confidence(tmp), Confidence::kHigh);
  EXPECT_EQ(verdict_cause(analyze_text("cp: error writing '/data/imagenet.tar': No space left on "
                                       "device\n")),
            "disk_full");
  EXPECT_EQ(verdict_cause(analyze_text("sort: write error: /var/tmp/sortXYZ: No space left on "
                                       "device\n")),
            "tmp_full");
}

TEST(LocatedErrors, TheTracebackPlacesAnErrorWithoutAPathAtMediumConfidence) {
  const std::string enospc = "OSError: [Errno 28] No space left on device\n";
  const Diagnosis temp =
      analyze_text("  File \"/usr/lib/python3.10/tempfile.py\", line 368, in mkdtemp\n" + enospc);
  EXPECT_EQ(verdict_cause(temp), "tmp_full");
  EXPECT_EQ(confidence(temp), Confidence::kMedium);
  // A semaphore's page in /dev/shm could not be had: /dev/shm was full before the job
  // put anything there.
  EXPECT_EQ(verdict_cause(analyze_text(
                "  File \"/usr/lib/python3.10/multiprocessing/synchronize.py\", line 57, in "
                "__init__\n    sl = self._semlock = _multiprocessing.SemLock(\n" +
                enospc)),
            "shm_stale");
  // The nearest hint wins: a temp path far above, torch.save just above.
  EXPECT_EQ(verdict_cause(analyze_text(
                "data cached in /tmp/cache\n"
                "  File \"/usr/lib/python3/dist-packages/torch/serialization.py\", line 441, in "
                "save\n" +
                enospc)),
            "disk_full");
  // The frames after the error (a paste that put the exception first).
  EXPECT_EQ(verdict_cause(analyze_text(
                enospc + "  File \"billiard/synchronize.py\", line 72, in __init__\n")),
            "shm_stale");
  // Nothing near: the disk, but not certainly.
  const Diagnosis bare = analyze_text(enospc);
  EXPECT_EQ(verdict_cause(bare), "disk_full");
  EXPECT_EQ(confidence(bare), Confidence::kMedium);
}

TEST(LocatedErrors, AHintTooFarAwayDoesNotPlaceIt) {
  std::string log = "writing cache to /tmp/cache\n";
  for (int i = 0; i < 60; ++i) log += "step " + std::to_string(i) + " loss 0.1\n";
  EXPECT_EQ(verdict_cause(analyze_text(log + "OSError: [Errno 28] No space left on device\n")),
            "disk_full");
}

TEST(SignalReports, EveryWordingOfADeathNamesTheSignal) {
  const std::pair<const char*, const char*> cases[] = {
      {"train.sh: line 12:  4242 Killed                  python train.py\n", "host_oom"},
      {"zsh: bus error (core dumped)  python x.py\n", "shm_too_small"},
      {"  exitcode  : -7 (pid: 2212)\n", "shm_too_small"},
      {"[launch.py:321:sigkill_handler] ['python', 'x.py'] exits with return code = -9\n",
       "host_oom"},
      {"torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal "
       "SIGSEGV\n",
       "native_crash"},
      {"    Last State:     Terminated\n      Exit Code:    135\n", "shm_too_small"},
      {"=   KILLED BY SIGNAL: 9 (Killed)\n", "host_oom"},
      {"Received Signals.SIGHUP death signal, shutting down workers\n", "terminated"},
      {"Process finished with exit code 130 (interrupted by signal 2: SIGINT)\n", "interrupted"},
      {"bash: line 1:  77 File size limit exceeded (core dumped) ./extract\n", "file_size_limit"},
  };
  for (const auto& [log, cause] : cases) EXPECT_EQ(verdict_cause(analyze_text(log)), cause) << log;
  // An ordinary exit status is no signal.
  EXPECT_EQ(verdict_cause(analyze_text("srun: error: n1: task 0: Exited with exit code 1\n")),
            "none");
}

TEST(SignalReports, AStopBeforeTheKillsExplainsThemAndCleanupAfterDoesNot) {
  const std::string limit =
      "slurmstepd: error: *** STEP 5.0 ON n1 CANCELLED AT 2024-04-11T06:00:14 DUE TO TIME "
      "LIMIT ***\n";
  const std::string killed = "srun: error: n1: task 0: Killed\n";
  EXPECT_EQ(verdict_cause(analyze_text(limit + killed)), "terminated");
  // srun ending the other tasks after one was killed is the cleanup.
  EXPECT_EQ(verdict_cause(analyze_text(killed + "srun: error: n1: tasks 1-3: Terminated\n")),
            "host_oom");
  // A kernel record of the OOM killer outweighs any stop.
  EXPECT_EQ(verdict_cause(analyze_text(
                limit + killed + "Memory cgroup out of memory: Killed process 51 (python)\n")),
            "host_oom");
}

TEST(Reasoning, LeftoverSegmentsExplainAFullDevShm) {
  const std::string bus =
      "RuntimeError: DataLoader worker (pid 7) is killed by signal: Bus error. It is possible "
      "that dataloader's workers are out of shared memory.\n";
  EXPECT_EQ(verdict_cause(analyze_text(bus)), "shm_too_small");
  // A listing of several segments of other runs; one entry may be the job's own.
  const std::string listing =
      "$ ls -l /dev/shm\n"
      "-rw------- 1 ann ann 4294967296 Mar  2 04:11 torch_18211_2091374555_0\n"
      "-rw------- 1 bob bob 2147483648 Feb 27 22:40 nccl-Ak3f9d\n";
  EXPECT_EQ(verdict_cause(analyze_text(bus + listing)), "shm_stale");
  EXPECT_EQ(verdict_cause(analyze_text(bus + listing.substr(0, listing.rfind("-rw")))),
            "shm_too_small");
}

TEST(Reasoning, ADevShmShownRoomyMakesAShmVerdictDoubtful) {
  const std::string bus =
      "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient "
      "shared memory (shm).\n";
  EXPECT_EQ(confidence(analyze_text(bus)), Confidence::kHigh);
  const Diagnosis roomy = analyze_text(bus +
                                       "$ df -h /dev/shm\nFilesystem Size Used Avail Use% "
                                       "Mounted on\ntmpfs 504G 1.1G 503G 1% /dev/shm\n");
  EXPECT_EQ(verdict_cause(roomy), "shm_too_small");
  EXPECT_EQ(confidence(roomy), Confidence::kMedium);
  // A stop reported after the failure does not take its place.
  EXPECT_EQ(verdict_cause(analyze_text(
                "OSError: [Errno 28] No space left on device: '/data/ckpt.pt'\n"
                "slurmstepd: error: *** JOB 5 ON n1 CANCELLED AT 2024-04-11T06:00:14 ***\n"
                "srun: error: n1: tasks 0-3: Terminated\n")),
            "disk_full");
}

TEST(Reasoning, SeveralWorkersDeadAtOnceIsASignalToTheGroup) {
  EXPECT_EQ(verdict_cause(analyze_text(
                "RuntimeError: DataLoader worker (pid(s) 213446, 213447, 213448) exited "
                "unexpectedly\n")),
            "interrupted");
  EXPECT_EQ(verdict_cause(analyze_text(
                "RuntimeError: DataLoader worker (pid(s) 213446) exited unexpectedly\n")),
            "host_oom");
}

TEST(Reasoning, ACutTracebackInASaveIsAHintOnlyWhileNoExceptionFollows) {
  const std::string frames =
      "Traceback (most recent call last):\n"
      "  File \"train.py\", line 9, in <module>\n"
      "    trainer.save_checkpoint(path)\n"
      "  File \"/x/trainer.py\", line 120, in save_checkpoint\n";
  const Diagnosis cut = analyze_text(frames);
  EXPECT_EQ(verdict_cause(cut), "disk_full");
  EXPECT_EQ(confidence(cut), Confidence::kLow);
  EXPECT_EQ(verdict_cause(analyze_text(frames + "    os.makedirs(path)\n"
                                                "PermissionError: [Errno 13] Permission "
                                                "denied: '/models'\n")),
            "none");
}

TEST(Reasoning, ImpossibleSizesAreTheProgramsFault) {
  EXPECT_EQ(verdict_cause(analyze_text(
                "numpy.core._exceptions._ArrayMemoryError: Unable to allocate 29.1 TiB for an "
                "array with shape (2000000, 2000000) and data type float64\n")),
            "program_error");
  EXPECT_EQ(verdict_cause(analyze_text(
                "numpy.core._exceptions._ArrayMemoryError: Unable to allocate 3.7 GiB for an "
                "array with shape (1000, 1000, 500) and data type float64\n")),
            "host_oom");
}

}  // namespace
}  // namespace headroom
