#include "core/kernel/proc_maps.h"

#include <gtest/gtest.h>
#include <sys/sysmacros.h>

namespace headroom {
namespace {

TEST(ParseMapsLine, ReadsAFileMapping) {
  const auto line = parse_maps_line(
      "7f3a1c000000-7f3a1c400000 rw-s 00001000 00:1a 123456                     "
      "/dev/shm/nccl-AbC123");
  ASSERT_TRUE(line);
  EXPECT_EQ(line->start, 0x7f3a1c000000u);
  EXPECT_EQ(line->end, 0x7f3a1c400000u);
  EXPECT_EQ(line->offset, 0x1000u);
  EXPECT_EQ(line->major, 0u);
  EXPECT_EQ(line->minor, 0x1au);
  EXPECT_EQ(line->inode, 123456u);
  EXPECT_TRUE(line->shared);
  EXPECT_EQ(line->path, "/dev/shm/nccl-AbC123");
}

TEST(ParseMapsLine, DeviceColumnIsHex) {
  const auto line = parse_maps_line("00400000-00452000 r-xp 00000000 fd:01 9 /usr/bin/x");
  ASSERT_TRUE(line);
  EXPECT_EQ(line->major, 253u);
  EXPECT_EQ(line->minor, 1u);
  EXPECT_EQ(make_device(line->major, line->minor), static_cast<std::uint64_t>(makedev(253, 1)));
  EXPECT_FALSE(line->shared);
}

TEST(ParseMapsLine, KeepsDeletedSuffixAndSpacesInPath) {
  const auto line =
      parse_maps_line("7f00-7f10 rw-s 00000000 00:05 42 /dev/shm/torch 1 2 (deleted)");
  ASSERT_TRUE(line);
  EXPECT_EQ(line->path, "/dev/shm/torch 1 2 (deleted)");
}

TEST(ParseMapsLine, SysvSegmentHasShmidAsInode) {
  const auto line = parse_maps_line("7f00-7f10 rw-s 00000000 00:01 32769 /SYSV0000162e (deleted)");
  ASSERT_TRUE(line);
  EXPECT_EQ(line->inode, 32769u);
  EXPECT_EQ(line->path, "/SYSV0000162e (deleted)");
}

TEST(ParseMapsLine, AnonymousAndPseudoMappings) {
  const auto anonymous = parse_maps_line("7ffd0000-7ffd1000 rw-p 00000000 00:00 0");
  ASSERT_TRUE(anonymous);
  EXPECT_EQ(anonymous->inode, 0u);
  EXPECT_EQ(anonymous->path, "");
  const auto stack = parse_maps_line("7ffd0000-7ffd1000 rw-p 00000000 00:00 0      [stack]");
  ASSERT_TRUE(stack);
  EXPECT_EQ(stack->path, "[stack]");
}

TEST(ParseMapsLine, RejectsMalformedLines) {
  for (const char* bad : {"", "garbage", "7f00 rw-s 0 00:01 1 /x", "7f00-7f10 rw-s 0 0001 1 /x",
                          "7f00-7f10 rw-s zz 00:01 1 /x", "7f10-7f00 rw-s 0 00:01 1 /x",
                          "7f00-7f10 rw 0 00:01 1 /x", "7f00-7f10 rw-s 0 00:01 x /x"}) {
    EXPECT_FALSE(parse_maps_line(bad)) << bad;
  }
}

}  // namespace
}  // namespace headroom
