#include "core/kernel/sysvipc_shm.h"

#include <gtest/gtest.h>

namespace headroom {
namespace {

// Recorded from Linux 6.1 (header and columns as the kernel aligns them).
constexpr std::string_view kTwoSegments =
    "       key      shmid perms                  size  cpid  lpid nattch   uid   gid  cuid  cgid"
    "      atime      dtime      ctime                   rss                  swap\n"
    "      5678          3   600               4194304  1200  1300      0  1000  1000  1000  1000"
    " 1700000000 1700000100 1699999999               4194304                     0\n"
    "         0          4  1666                 65536  1201  1201      2     0     0     0     0"
    " 1700000200          0 1700000150                 65536                  4096\n";

TEST(ParseSysvipcShm, ReadsEveryColumn) {
  const auto segments = parse_sysvipc_shm(kTwoSegments);
  ASSERT_TRUE(segments) << segments.error().message;
  ASSERT_EQ(segments->size(), 2u);
  const SysvSegment& stale = (*segments)[0];
  EXPECT_EQ(stale.key, 5678);
  EXPECT_EQ(stale.shmid, 3);
  EXPECT_EQ(stale.perms, 0600u);
  EXPECT_EQ(stale.size_bytes, 4194304u);
  EXPECT_EQ(stale.creator_pid, 1200);
  EXPECT_EQ(stale.last_pid, 1300);
  EXPECT_EQ(stale.attachments, 0u);
  EXPECT_EQ(stale.uid, 1000u);
  EXPECT_EQ(stale.attach_time, 1700000000);
  EXPECT_EQ(stale.detach_time, 1700000100);
  EXPECT_EQ(stale.change_time, 1699999999);
  EXPECT_EQ(stale.rss_bytes, 4194304u);
  const SysvSegment& attached = (*segments)[1];
  EXPECT_EQ(attached.perms, 01666u);
  EXPECT_EQ(attached.attachments, 2u);
  EXPECT_EQ(attached.swap_bytes, 4096u);
}

TEST(ParseSysvipcShm, HeaderOnlyIsEmpty) {
  const auto segments = parse_sysvipc_shm(
      "       key      shmid perms       size  cpid  lpid nattch   uid   gid  cuid  cgid      atime"
      "      dtime      ctime                   rss                  swap\n");
  ASSERT_TRUE(segments);
  EXPECT_TRUE(segments->empty());
}

TEST(ParseSysvipcShm, OldKernelsWithoutRssAndSwap) {
  const auto segments = parse_sysvipc_shm(
      "key shmid perms size cpid lpid nattch uid gid cuid cgid atime dtime ctime\n"
      "-1 7 644 100 1 2 1 0 0 0 0 0 0 5\n");
  ASSERT_TRUE(segments);
  ASSERT_EQ(segments->size(), 1u);
  EXPECT_EQ((*segments)[0].key, -1);
  EXPECT_EQ((*segments)[0].rss_bytes, 0u);
}

TEST(ParseSysvipcShm, MalformedRowNamesItsLine) {
  const auto short_row = parse_sysvipc_shm("key shmid\n1 2 3\n");
  ASSERT_FALSE(short_row);
  EXPECT_NE(short_row.error().message.find("sysvipc/shm:2"), std::string::npos);
  const auto not_number = parse_sysvipc_shm("1 2 600 x 1 2 0 0 0 0 0 0 0 0\n");
  ASSERT_FALSE(not_number);
  EXPECT_EQ(not_number.error().code, Error::Code::kParse);
}

}  // namespace
}  // namespace headroom
