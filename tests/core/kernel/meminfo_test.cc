#include "core/kernel/meminfo.h"

#include <gtest/gtest.h>

#include "core/fixture_context.h"

namespace headroom {
namespace {

TEST(ParseMeminfo, ConvertsKilobytesToBytes) {
  auto info = parse_meminfo(
      "MemTotal:       24684092 kB\nMemFree:        23575448 kB\nMemAvailable:   23973564 kB\n"
      "SwapTotal:        1048576 kB\nSwapFree:          524288 kB\nShmem:  2048 kB\n"
      "HugePages_Total:       4\n");
  ASSERT_TRUE(info) << info.error().message;
  EXPECT_EQ(info->total_bytes, 24684092ULL * 1024);
  EXPECT_EQ(info->available_bytes, 23973564ULL * 1024);
  EXPECT_FALSE(info->available_estimated);
  EXPECT_EQ(info->swap_total_bytes, 1024ULL * 1024 * 1024);
  EXPECT_EQ(info->swap_free_bytes, 512ULL * 1024 * 1024);
  EXPECT_EQ(info->shmem_bytes, 2048ULL * 1024);
  EXPECT_EQ(info->field("HugePages_Total"), 4U);  // a page count: no unit
}

TEST(ParseMeminfo, EstimatesAvailableOnOldKernels) {
  auto info = parse_meminfo("MemTotal: 1000 kB\nMemFree: 100 kB\nBuffers: 10 kB\nCached: 200 kB\n");
  ASSERT_TRUE(info);
  EXPECT_TRUE(info->available_estimated);
  EXPECT_EQ(info->available_bytes, 310U * 1024);
}

TEST(ParseMeminfo, RejectsMalformedInput) {
  EXPECT_FALSE(parse_meminfo("MemFree: 100 kB\n"));  // no MemTotal
  auto bad = parse_meminfo("MemTotal: 100 kB\nMemFree 100 kB\n");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find(":2:"), std::string::npos) << bad.error().message;
  EXPECT_FALSE(parse_meminfo("MemTotal: lots kB\n"));
}

TEST(ReadMeminfo, ReadsTheRecordedHost) {
  testing::FakeSyscalls syscalls;
  auto info = read_meminfo(testing::fixture_context("bare_host", syscalls));
  ASSERT_TRUE(info) << info.error().message;
  EXPECT_GT(info->total_bytes, 1ULL << 30);
  EXPECT_LE(info->available_bytes, info->total_bytes);
}

}  // namespace
}  // namespace headroom
