#include "core/supervise/output_ring.h"

#include <gtest/gtest.h>
#include <unistd.h>

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

}  // namespace
}  // namespace headroom
