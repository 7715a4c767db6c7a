// Reading a large log on several threads (log_reader.cc's feed_parallel): each thread reads
// and scans a chunk, the chunks are fed in order, and the diagnosis is the one a single pass
// gives, whatever falls on a chunk's edge. Small chunks put many edges in a small file.

#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <random>
#include <string>
#include <system_error>
#include <thread>

#include "core/explain/log_reader.h"
#include "core/explain/render.h"
#include "core/scratch_root.h"
#include "core/signatures/analyze.h"

namespace headroom {
namespace {

using testing::analyze_text;
using testing::builtin_compiled;
using testing::ScratchRoot;
using testing::verdict_cause;

/// Everything explain prints of a diagnosis, to compare two readings whole.
std::string as_json(const Diagnosis& diagnosis) {
  return explain_to_json(diagnosis, HostConfirmation{}, {}).dump(1);
}

Diagnosis read_file(const std::filesystem::path& path, ReadOptions options,
                    std::uint64_t* fed = nullptr) {
  LogAnalyzer analyzer(builtin_compiled());
  auto result = feed_file(analyzer, path, "", options);
  EXPECT_TRUE(result.has_value()) << (result ? "" : result.error().message);
  if (fed != nullptr) *fed = result ? *result : 0;
  return analyzer.finish();
}

void write(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

/// Ordinary training output, `bytes` long or a line more.
std::string filler(std::size_t bytes, std::mt19937& random) {
  std::string text;
  while (text.size() < bytes) {
    switch (random() % 4) {
      case 0:
        text += "[rank" + std::to_string(random() % 8) + "]: step " + std::to_string(random()) +
                " loss 0.4123 lr 1.00e-04 grad_norm 1.234\n";
        break;
      case 1:
        text +=
            "\rEpoch 3:  41%|####      | 2050/5000 [00:41<12:00, 4.2it/s]"
            "\rEpoch 3:  42%|####      | 2100/5000 [00:42<12:00, 4.2it/s]\n";
        break;
      case 2:
        text += "gpu-node-0:1000:2000 [0] NCCL INFO Channel 01/0 : 0 -> 1 via P2P/IPC/read\r\n";
        break;
      default:
        text += "2024-05-01T10:00:00.000Z INFO     eval step 9: accuracy=0.5 samples=123\n";
    }
  }
  return text;
}

/// A log with something for every rule of the reading, each piece `gap` bytes of filler
/// apart: located errors with hints above and below, a tqdm line whose last redraw is the
/// error, CRLF lines, a line-start literal, a line longer than the analysed 64 KiB, a
/// marker that cancels a hint, kill reports.
std::string eventful_log(std::size_t gap, std::mt19937& random) {
  const std::string pieces[] = {
      "OSError: [Errno 24] Too many open files\n",
      "  File \"/usr/lib/python3.11/tempfile.py\", line 368, in mkdtemp\n"
      "OSError: [Errno 28] No space left on device\n",
      "OSError: [Errno 28] No space left on device\n/tmp/foo/bar\n",
      "\rEpoch 1:  10%|#         | 50/500\rRuntimeError: CUDA out of memory. Tried to allocate "
      "2.00 GiB\r\n",
      "[rank3]: RuntimeError: DataLoader worker (pid 51022) is killed by signal: Killed. \r\n",
      "[1209331.551301] Out of memory: Killed process 51022 (python) total-vm:38471200kB\n",
      std::string(70 * 1024, 'x') + " Bus error (core dumped)\n",
      "ERROR: Unexpected bus error encountered in worker. This might be caused by "
      "insufficient shared memory (shm).\n",
      "torch.save(model, '/ckpt/model.pt')\nTraceback (most recent call last):\n"
      "RuntimeError: PytorchStreamWriter failed writing file data/0: file write failed\n",
      "thread creation failed: Resource temporarily unavailable\n",
  };
  std::string log;
  for (const std::string& piece : pieces) {
    log += filler(gap, random);
    log += piece;
  }
  return log + filler(gap, random);
}

TEST(ParallelRead, GivesTheDiagnosisOfOnePassWhateverTheChunkEdgesCut) {
  std::mt19937 random(3);
  const ScratchRoot dir;
  const std::filesystem::path path = dir.path() / "train.log";
  // Past the first MiB too, where lines are no longer read joined.
  const std::string log = eventful_log(120 * 1024, random);
  write(path, log);
  ASSERT_NE(verdict_cause(analyze_text(log)), "none");
  EXPECT_EQ(as_json(read_file(path, ReadOptions{})), as_json(analyze_text(log)));
  // Against one thread reading in chunks of the same size (a line longer than 64 KiB is
  // analysed whole only inside a chunk: what a chunk edge cuts off it is skipped, there too).
  for (const std::size_t chunk : {std::size_t{61}, std::size_t{997}, std::size_t{4096},
                                  std::size_t{65536}, std::size_t{300000}}) {
    const std::string one_thread = as_json(read_file(path, ReadOptions{1, chunk}));
    for (const unsigned threads : {2U, 3U}) {
      EXPECT_EQ(as_json(read_file(path, ReadOptions{threads, chunk})), one_thread)
          << threads << " threads, chunks of " << chunk;
    }
  }
  // Scanned in two stages (literal_scanner.h): once they are compiled, every chunk is.
  LogAnalyzer(builtin_compiled()).literal_scanner().prepare();
  for (const std::size_t chunk : {std::size_t{997}, std::size_t{65536}, std::size_t{300000}}) {
    ReadOptions options{2, chunk};
    options.two_stages = 0;
    EXPECT_EQ(as_json(read_file(path, options)), as_json(read_file(path, ReadOptions{1, chunk})))
        << "two stages, chunks of " << chunk;
  }
}

TEST(ParallelRead, ASignatureAcrossAChunkEdgeIsFoundOnceOnItsLine) {
  std::mt19937 random(5);
  const ScratchRoot dir;
  const std::filesystem::path path = dir.path() / "train.log";
  constexpr std::size_t kChunk = 4096;
  const std::string error = "OSError: [Errno 24] Too many open files\n";
  for (std::size_t cut = 1; cut < error.size(); cut += 3) {
    // The edge between chunks 5 and 6 falls `cut` bytes into the error's line.
    std::string log = filler(kChunk * 5 - cut - 200, random);
    log.append(kChunk * 5 - cut - log.size() - 1, 'y');
    log += '\n';
    const std::uint64_t line =
        static_cast<std::uint64_t>(std::count(log.begin(), log.end(), '\n')) + 1;
    log += error + filler(kChunk * 4, random);
    write(path, log);
    const Diagnosis diagnosis = read_file(path, ReadOptions{2, kChunk});
    ASSERT_EQ(verdict_cause(diagnosis), "fd_limit") << cut;
    EXPECT_EQ(diagnosis.verdict()->matches, 1U) << cut;
    ASSERT_EQ(diagnosis.evidence.size(), 1U) << cut;
    EXPECT_EQ(diagnosis.evidence.front().line, line) << cut;
    EXPECT_EQ(diagnosis.lines,
              static_cast<std::uint64_t>(std::count(log.begin(), log.end(), '\n')));
  }
}

TEST(ParallelRead, ARedrawnProgressBarAcrossAnEdgeShowsTheSegmentWithTheError) {
  std::mt19937 random(9);
  const ScratchRoot dir;
  const std::filesystem::path path = dir.path() / "train.log";
  constexpr std::size_t kChunk = 1000;
  std::string log = filler(kChunk * 3 - 40, random);
  // tqdm's redraws with '\r', then the error, then CRLF; the chunk edge falls in the bar.
  log +=
      "\rEpoch 1:  10%|#         | 50/500\rEpoch 1:  11%|#         | 55/500"
      "\rRuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\r\n";
  log += filler(kChunk * 3, random);
  write(path, log);
  const Diagnosis diagnosis = read_file(path, ReadOptions{2, kChunk});
  ASSERT_EQ(verdict_cause(diagnosis), "gpu_oom");
  ASSERT_EQ(diagnosis.evidence.size(), 1U);
  EXPECT_EQ(diagnosis.evidence.front().text,
            "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB");
  EXPECT_EQ(as_json(diagnosis), as_json(analyze_text(log)));
}

TEST(ParallelRead, EmptyFilesAndFilesWithoutANewline) {
  const ScratchRoot dir;
  const std::filesystem::path empty = dir.path() / "empty.log";
  write(empty, "");
  std::uint64_t fed = 1;
  const Diagnosis nothing = read_file(empty, ReadOptions{2, 64}, &fed);
  EXPECT_EQ(fed, 0U);
  EXPECT_EQ(nothing.lines, 0U);
  EXPECT_EQ(verdict_cause(nothing), "none");

  // One line of many chunks, no '\n' at all, the error at its start and its end.
  const std::filesystem::path one_line = dir.path() / "one-line.log";
  const std::string error = "OSError: [Errno 24] Too many open files";
  write(one_line, error);
  EXPECT_EQ(verdict_cause(read_file(one_line, ReadOptions{2, 7})), "fd_limit");
  for (const std::string& text :
       {error + std::string(100, 'z'), std::string(100, 'z') + error,
        std::string(200 * 1024, 'z') + error, error + std::string(200 * 1024, 'z')}) {
    write(one_line, text);
    const Diagnosis diagnosis = read_file(one_line, ReadOptions{2, 64}, &fed);
    EXPECT_EQ(fed, text.size());
    EXPECT_EQ(diagnosis.lines, 1U);
    EXPECT_EQ(as_json(diagnosis), as_json(read_file(one_line, ReadOptions{1, 64}))) << text.size();
  }
}

TEST(ParallelRead, AFileTruncatedWhileReadEndsWhereItWasCut) {
  std::mt19937 random(13);
  const ScratchRoot dir;
  const std::filesystem::path path = dir.path() / "rotated.log";
  const std::string log = filler(8 << 20, random);
  for (const bool map : {false, true}) {
    for (int round = 0; round < 5; ++round) {
      write(path, log);
      std::atomic<bool> started = false;
      std::thread rotate([&] {
        while (!started) std::this_thread::yield();
        std::this_thread::sleep_for(std::chrono::milliseconds(round * 3));
        std::filesystem::resize_file(path, static_cast<std::uintmax_t>(random() % log.size()));
      });
      LogAnalyzer analyzer(builtin_compiled());
      started = true;
      ReadOptions options{2, 4096};
      options.map = map;
      auto fed = feed_file(analyzer, path, "", options);
      rotate.join();
      ASSERT_TRUE(fed.has_value());
      ASSERT_LE(*fed, log.size());
      // What was fed is the file's start as it was: its lines, a cut last one included.
      // Mapped, a page cut while it was being fed read as zeros: no more lines than that.
      const Diagnosis diagnosis = analyzer.finish();
      const std::string_view read(log.data(), *fed);
      const auto lines = static_cast<std::uint64_t>(std::count(read.begin(), read.end(), '\n')) +
                         (read.empty() || read.back() == '\n' ? 0 : 1);
      if (map) {
        EXPECT_LE(diagnosis.lines, lines) << "round " << round;
      } else {
        EXPECT_EQ(diagnosis.lines, lines) << "round " << round;
      }
      EXPECT_EQ(diagnosis.bytes, *fed);
    }
  }
}

// A location hint that asks for a line start ("\n/tmp/"), past the first MiB, made the
// scan go round forever on the hit at the '\n'. In a child with an alarm, so that the
// regression fails instead of hanging the suite.
/// In a child: becomes nobody with no task left to start (RLIMIT_NPROC 0), then reads
/// `path` on 2 threads; 0 when the diagnosis is `expected`.
int read_without_tasks(const std::filesystem::path& path, const std::string& expected) {
  ::alarm(30);
  const rlimit none{0, 0};
  if (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0 ||
      ::setrlimit(RLIMIT_NPROC, &none) != 0) {
    return 3;
  }
  try {
    std::thread([] {}).join();
    return 4;  // the limit did not hold: the test would prove nothing
  } catch (const std::system_error&) {
  }
  return as_json(read_file(path, ReadOptions{2, 65536})) == expected ? 0 : 1;
}

/// Under a task limit (ulimit -u, a container's pids.max) no thread can be created: the file
/// is still read, on the calling thread, to the same diagnosis. explain is what people run
/// when such a limit killed their job; it must not die of the same limit.
TEST(ParallelRead, NoThreadCanBeCreatedAndTheFileIsStillRead) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to become another user with no tasks left";
  std::mt19937 random(11);
  const ScratchRoot dir;
  const std::filesystem::path path = dir.path() / "train.log";
  write(path, eventful_log(40 * 1024, random));
  const std::string expected = as_json(read_file(path, ReadOptions{1, 65536}));
  ASSERT_NE(expected.find("verdict"), std::string::npos);
  // Opened here: the child reads it through /proc/self/fd whatever the directories allow.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  const std::filesystem::path by_fd = "/proc/self/fd/" + std::to_string(fd);
  // _exit: LeakSanitizer's exit-time check (the ASan build) needs a thread of its own.
  EXPECT_EXIT(::_exit(read_without_tasks(by_fd, expected)), ::testing::ExitedWithCode(0), "");
  ::close(fd);
}

TEST(ExplainReading, ALineStartLiteralPastTheHeadIsReadOnTheLineItStarts) {
  std::string log;
  while (log.size() < 1100 * 1024) log += "step 1 loss 0.5 lr 1e-4 tokens/s 12000\n";
  log += "OSError: [Errno 28] No space left on device\n/tmp/foo\n";
  EXPECT_EXIT(
      {
        ::alarm(30);
        const Diagnosis diagnosis = analyze_text(log);
        std::exit(verdict_cause(diagnosis) == "tmp_full" ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
  // At the very start of a block too (every feed of whole lines starts one).
  const std::string head = log.substr(0, log.rfind("/tmp/foo"));
  LogAnalyzer analyzer(builtin_compiled());
  analyzer.feed(head);
  analyzer.feed("/tmp/foo\n");
  EXPECT_EQ(verdict_cause(analyzer.finish()), "tmp_full");
}

}  // namespace
}  // namespace headroom
