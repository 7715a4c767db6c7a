#include "core/supervise/sink_writer.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "core/unique_fd.h"

namespace headroom {
namespace {

struct Pipe {
  UniqueFd read;
  UniqueFd write;
};

Pipe make_pipe(int size = 4096) {
  int fds[2];
  EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  (void)::fcntl(fds[1], F_SETPIPE_SZ, size);
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

std::string read_all(int fd) {
  std::string text;
  char buffer[4096];
  for (;;) {
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got <= 0) return text;
    text.append(buffer, static_cast<std::size_t>(got));
  }
}

std::string read_all_nonblocking(int fd) {
  (void)::fcntl(fd, F_SETFL, O_NONBLOCK);
  return read_all(fd);
}

TEST(SinkWriter, PassesEveryByteInOrderToAReader) {
  Pipe pipe = make_pipe();
  std::string expected;
  std::string got;
  std::thread reader([&] { got = read_all(pipe.read.get()); });
  {
    SinkWriter writer(pipe.write.get(), 1 << 20);
    for (int i = 0; i < 2000; ++i) {
      const std::string line = "line " + std::to_string(i) + "\n";
      expected += line;
      writer.write(line);
    }
    EXPECT_TRUE(writer.flush(std::chrono::seconds(5)));
    EXPECT_EQ(writer.stats().dropped_bytes, 0u);
    EXPECT_EQ(writer.stats().written_bytes, expected.size());
  }
  pipe.write = UniqueFd();
  reader.join();
  EXPECT_EQ(got, expected);
}

TEST(SinkWriter, NeverBlocksOnAStalledReaderAndCountsWhatItDrops) {
  Pipe pipe = make_pipe(4096);  // nobody reads it
  SinkWriter writer(pipe.write.get(), 64 * 1024);
  const std::string chunk(16 * 1024, 'x');
  const auto started = std::chrono::steady_clock::now();
  for (int i = 0; i < 64; ++i) writer.write(chunk);  // 1 MiB into 4 KiB + 64 KiB
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(1));
  EXPECT_FALSE(writer.flush(std::chrono::milliseconds(200)));
  const SinkStats stats = writer.stats();
  EXPECT_TRUE(stats.abandoned);
  // The write stuck since the first chunk counts as the longest wait (it never returned).
  EXPECT_GE(stats.longest_stall, std::chrono::milliseconds(100));
  EXPECT_EQ(stats.written_bytes + stats.dropped_bytes, 64u * chunk.size());
  EXPECT_LE(stats.written_bytes, 4096u + chunk.size());
  // The bytes that were written are whole chunks' prefix: what the reader gets is in order.
  EXPECT_EQ(read_all_nonblocking(pipe.read.get()).find_first_not_of('x'), std::string::npos);
}

TEST(SinkWriter, AReaderThatWentAwayIsBrokenNotFatal) {
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  struct sigaction previous {};
  ::sigaction(SIGPIPE, &ignore, &previous);
  Pipe pipe = make_pipe();
  pipe.read = UniqueFd();
  SinkWriter writer(pipe.write.get());
  writer.write("lost\n");
  (void)writer.flush(std::chrono::seconds(5));
  EXPECT_TRUE(writer.broken());
  EXPECT_EQ(writer.stats().dropped_bytes, 5u);
  ::sigaction(SIGPIPE, &previous, nullptr);
}

TEST(SinkWriter, AFlushWaitsForASlowReaderThatMakesProgress) {
  Pipe pipe = make_pipe(4096);
  SinkWriter writer(pipe.write.get(), 1 << 20);
  writer.write(std::string(256 * 1024, 'y'));
  std::string got;
  std::thread reader([&] {
    char buffer[4096];
    // 4 KiB every 20 ms: 1.3 s for all of it, a 64 KiB write's worth every 320 ms.
    while (got.size() < 256 * 1024) {
      const ssize_t n = ::read(pipe.read.get(), buffer, sizeof buffer);
      if (n <= 0) break;
      got.append(buffer, static_cast<std::size_t>(n));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  EXPECT_TRUE(writer.flush(std::chrono::milliseconds(1000)));
  reader.join();
  EXPECT_EQ(got.size(), 256u * 1024);
  EXPECT_EQ(writer.stats().dropped_bytes, 0u);
}

TEST(MakeOutputWriters, OneWriterWhenStdoutAndStderrAreTheSameFile) {
  Pipe pipe = make_pipe();
  const UniqueFd copy(::dup(pipe.write.get()));
  const OutputWriters same = make_output_writers(pipe.write.get(), copy.get()).value();
  EXPECT_EQ(same.out, same.err);
  Pipe other = make_pipe();
  const OutputWriters different = make_output_writers(pipe.write.get(), other.write.get()).value();
  EXPECT_NE(different.out, different.err);
}

TEST(SinkWriter, AFullQueueHoldsTheCallerBackOnlyWhileTheReaderStillReads) {
  using std::chrono::milliseconds;
  Pipe pipe = make_pipe();  // one page, never read yet
  SinkWriter writer(pipe.write.get(), 8192);
  writer.write(std::string(4096, 'a'));  // fills the pipe
  ASSERT_TRUE(writer.flush(std::chrono::seconds(5)));
  writer.write(std::string(8192, 'b'));  // fills the queue: its first write blocks
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_TRUE(writer.should_wait(1024, milliseconds(5000)));  // behind, not yet stopped
  EXPECT_FALSE(writer.should_wait(1024, milliseconds(20)));   // blocked 50 ms > 20: stopped
  // The reader takes bytes: room comes, and wait_for_room returns as soon as it does.
  std::thread reader([&] {
    char buffer[4096];
    std::this_thread::sleep_for(milliseconds(100));
    (void)::read(pipe.read.get(), buffer, sizeof buffer);  // one page: room for 4 KiB
  });
  const auto started = std::chrono::steady_clock::now();
  writer.wait_for_room(4096, milliseconds(5000), milliseconds(5000));
  EXPECT_LT(std::chrono::steady_clock::now() - started, milliseconds(4000));
  EXPECT_FALSE(writer.should_wait(4096, milliseconds(5000)));
  reader.join();
  EXPECT_EQ(writer.stats().dropped_bytes, 0u);
  (void)read_all_nonblocking(pipe.read.get());
  EXPECT_TRUE(writer.flush(milliseconds(2000)));
}

}  // namespace
}  // namespace headroom
