#include "core/supervise/output_ring.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <random>
#include <thread>

namespace headroom {
namespace {

TEST(OutputRing, KeepsEverythingBelowCapacity) {
  OutputRing ring(16);
  ring.append("abc");
  ring.append("def");
  EXPECT_EQ(ring.contents(), "abcdef");
  EXPECT_FALSE(ring.truncated());
}

TEST(OutputRing, KeepsTheNewestBytesAcrossTheWrap) {
  OutputRing ring(8);
  ring.append("12345");
  ring.append("6789");
  EXPECT_EQ(ring.contents(), "23456789");
  ring.append("ab");
  EXPECT_EQ(ring.contents(), "456789ab");
  EXPECT_EQ(ring.total_bytes(), 11u);
  EXPECT_TRUE(ring.truncated());
}

TEST(OutputRing, AChunkLargerThanTheRingLeavesItsTail) {
  OutputRing ring(4);
  ring.append("x");
  ring.append("abcdefgh");
  EXPECT_EQ(ring.contents(), "efgh");
}

TEST(OutputRing, LastGivesTheNewestBytesAcrossTheWrap) {
  OutputRing ring(8);
  ring.append("12345");
  ring.append("6789");
  EXPECT_EQ(ring.last(3), "789");
  EXPECT_EQ(ring.last(6), "456789");
  EXPECT_EQ(ring.last(100), "23456789");
  EXPECT_EQ(OutputRing(4).last(2), "");
}

TEST(OutputRing, EndsAnOpenLineWithoutCountingIt) {
  OutputRing ring(5);
  ring.end_open_line();  // empty: nothing to end
  ring.append("ab\n");
  ring.end_open_line();  // already ended
  EXPECT_EQ(ring.contents(), "ab\n");
  ring.append("cd");
  ring.end_open_line();  // across the wrap
  EXPECT_EQ(ring.contents(), "b\ncd\n");
  EXPECT_EQ(ring.total_bytes(), 5u);
}

TEST(OutputRing, AppendFromReadsAPipeStraightIntoTheRingAcrossTheWrap) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  OutputRing ring(8);
  ring.append("12345");
  ASSERT_EQ(::write(fds[1], "6789ab", 6), 6);
  EXPECT_EQ(ring.append_from(fds[0], 6), 6u);
  EXPECT_EQ(ring.contents(), "456789ab");
  EXPECT_EQ(ring.total_bytes(), 11u);
  ::close(fds[1]);
  EXPECT_EQ(ring.append_from(fds[0], 4), 0u);  // EOF: nothing appended
  ::close(fds[0]);
}

TEST(OutputRing, ReadersSeeWholeChunksWhileAWriterAppends) {
  // The sampler thread reads the tail while the output thread appends.
  OutputRing ring(1 << 16);
  std::thread writer([&] {
    for (int i = 0; i < 20000; ++i) ring.append("abcdefgh");
  });
  for (int i = 0; i < 2000; ++i) {
    const std::string tail = ring.last(16);
    ASSERT_TRUE(tail.empty() || tail.size() == 8 || tail == "abcdefghabcdefgh") << tail;
  }
  writer.join();
  EXPECT_EQ(ring.total_bytes(), 20000u * 8);
  EXPECT_EQ(ring.last(8), "abcdefgh");
}

/// The bytes of a stream at positions [from, from + count): each byte says where it is, so a
/// byte out of order or lost shows.
std::string stream_bytes(std::size_t from, std::size_t count) {
  std::string out(count, '\0');
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t at = from + i;
    out[i] = static_cast<char>('a' + (at * 7 + at / 251) % 26);
  }
  return out;
}

/// Writes `bytes` into a fresh pipe and has the ring take them (as the supervisor does with
/// its side pipe: the bytes are known to be there).
std::size_t feed(OutputRing& ring, const std::string& bytes) {
  int fds[2];
  EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  (void)::fcntl(fds[1], F_SETPIPE_SZ, 1 << 20);
  std::size_t taken = 0;
  std::size_t written = 0;
  while (written < bytes.size()) {
    const std::size_t chunk = std::min<std::size_t>(bytes.size() - written, 256 << 10);
    const ssize_t put = ::write(fds[1], bytes.data() + written, chunk);
    EXPECT_GT(put, 0);
    written += static_cast<std::size_t>(put);
    taken += ring.append_from(fds[0], static_cast<std::size_t>(put));
  }
  ::close(fds[0]);
  ::close(fds[1]);
  return taken;
}

TEST(OutputRing, AFastWritersBytesAreHeldInPipesNotCopiedAndComeOutInOrder) {
  // 24 MiB through a 4 MiB ring in 256 KiB chunks: the kept bytes are the newest 4 MiB exactly.
  constexpr std::size_t kCapacity = 4 << 20;
  constexpr std::size_t kTotal = 24 << 20;
  OutputRing ring(kCapacity);
  EXPECT_EQ(feed(ring, stream_bytes(0, kTotal)), kTotal);
  EXPECT_GE(ring.held_bytes(), kCapacity);  // by page reference, nothing read yet
  EXPECT_EQ(ring.total_bytes(), kTotal);
  EXPECT_EQ(ring.last(100), stream_bytes(kTotal - 100, 100));
  EXPECT_EQ(ring.held_bytes(), 0U);  // a reader takes them out once
  EXPECT_EQ(ring.contents(), stream_bytes(kTotal - kCapacity, kCapacity));
  EXPECT_TRUE(ring.truncated());
}

TEST(OutputRing, PipedAndCopiedBytesInterleaveInTheirOrder) {
  // A model of what the ring must keep, against every way of adding and reading, in a
  // random order: chunks from a pipe (tiny ones fill a pipe's slots long before its bytes),
  // chunks from memory, lines ended between streams, readers in between.
  std::mt19937 random(20261126);
  constexpr std::size_t kCapacity = 64 << 10;
  OutputRing ring(kCapacity);
  std::string model;
  std::size_t position = 0;
  for (int step = 0; step < 4000; ++step) {
    const int what = static_cast<int>(random() % 10);
    const std::size_t size =
        what == 0 ? 1 + random() % (200 << 10) : 1 + random() % (random() % 2 ? 40 : 4000);
    if (what < 6) {
      const std::string bytes = stream_bytes(position, size);
      position += size;
      ASSERT_EQ(feed(ring, bytes), bytes.size());
      model += bytes;
    } else if (what < 8) {
      const std::string bytes = stream_bytes(position, size);
      position += size;
      ring.append(bytes);
      model += bytes;
    } else if (what == 8) {
      ring.end_open_line();
      if (!model.empty() && model.back() != '\n') model += '\n';
    } else {
      const std::size_t count = random() % 300;
      ASSERT_EQ(ring.last(count), model.substr(model.size() - std::min(count, model.size())))
          << "step " << step;
    }
    if (model.size() > 4 * kCapacity) model.erase(0, model.size() - kCapacity);
  }
  EXPECT_EQ(ring.contents(), model.substr(model.size() - std::min(kCapacity, model.size())));
}
}  // namespace
}  // namespace headroom
