#include "core/supervise/output_ring.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace headroom
