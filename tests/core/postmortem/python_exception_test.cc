#include "core/postmortem/python_exception.h"

#include <gtest/gtest.h>

namespace headroom {
namespace {

// torch.multiprocessing.spawn(nprocs=2) with gloo, rank 1 raising (Debian's torch 1.13,
// Python 3.11): main's traceback ends in ProcessRaisedException, then the rank's own.
constexpr std::string_view kSpawnRaised = R"(rank 0 pid 3378
rank 1 pid 3379
Traceback (most recent call last):
  File "/home/user/spawn_job.py", line 11, in <module>
    mp.spawn(worker, args=(2,), nprocs=2)
  File "/usr/lib/python3/dist-packages/torch/multiprocessing/spawn.py", line 240, in spawn
    return start_processes(fn, args, nprocs, join, daemon, start_method='spawn')
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/usr/lib/python3/dist-packages/torch/multiprocessing/spawn.py", line 160, in join
    raise ProcessRaisedException(msg, error_index, failed_process.pid)
torch.multiprocessing.spawn.ProcessRaisedException: 

-- Process 1 terminated with the following error:
Traceback (most recent call last):
  File "/usr/lib/python3/dist-packages/torch/multiprocessing/spawn.py", line 69, in _wrap
    fn(i, *args)
  File "/home/user/spawn_job.py", line 8, in worker
    raise ValueError("bad label 17 in batch 3")
ValueError: bad label 17 in batch 3

)";

TEST(LastPythonException, NamesTheSpawnedProcessThatRaised) {
  const auto raised = last_python_exception(kSpawnRaised);
  ASSERT_TRUE(raised);
  EXPECT_EQ(raised->text, "ValueError: bad label 17 in batch 3");
  EXPECT_EQ(raised->type, "ValueError");
  EXPECT_EQ(raised->line, 19u);
  EXPECT_EQ(raised->process_index, 1);
  EXPECT_FALSE(raised->rank);
}

TEST(LastPythonException, AProcessThatDiedWithoutATraceback) {
  const auto raised = last_python_exception(
      "Traceback (most recent call last):\n"
      "  File \"train.py\", line 3, in <module>\n"
      "torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal "
      "SIGSEGV\n");
  ASSERT_TRUE(raised);
  EXPECT_EQ(raised->type, "ProcessExitedException");
  EXPECT_EQ(raised->process_index, 1);
}

TEST(LastPythonException, TorchrunsRankPrefixAndInterleavedLines) {
  const auto raised = last_python_exception(
      "[rank1]: Traceback (most recent call last):\n"
      "[rank1]:   File \"train.py\", line 9, in <module>\n"
      "step 12 loss 0.3\n"  // another rank's output, in the middle
      "[rank1]: KeyError: 'label'\n");
  ASSERT_TRUE(raised);
  EXPECT_EQ(raised->text, "KeyError: 'label'");
  EXPECT_EQ(raised->rank, 1);
  EXPECT_FALSE(raised->process_index);
}

TEST(LastPythonException, TheLastOfChainedExceptionsAndDataLoaderOriginals) {
  const auto raised = last_python_exception(
      "Traceback (most recent call last):\n"
      "  File \"a.py\", line 1, in <module>\n"
      "KeyError: 3\n"
      "\n"
      "During handling of the above exception, another exception occurred:\n"
      "\n"
      "Traceback (most recent call last):\n"
      "  File \"a.py\", line 3, in <module>\n"
      "RuntimeError: Caught KeyError in DataLoader worker process 0.\n"
      "Original Traceback (most recent call last):\n"
      "  File \"worker.py\", line 302, in _worker_loop\n"
      "KeyError: 'missing.jpg'\n"
      "\r 10%|#   | 1/10\n");
  ASSERT_TRUE(raised);
  EXPECT_EQ(raised->text, "KeyError: 'missing.jpg'");
  EXPECT_EQ(raised->line, 12u);
}

TEST(LastPythonException, NoneWithoutATraceback) {
  EXPECT_FALSE(last_python_exception(""));
  EXPECT_FALSE(last_python_exception("ValueError: printed, not raised\nTraceback? no\n"));
  EXPECT_FALSE(last_python_exception("Traceback (most recent call last):\n  File \"x\"\n"));
}

}  // namespace
}  // namespace headroom
