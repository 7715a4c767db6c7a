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

TEST(ParseMeminfo, TheNamedLinesAloneGiveTheSameNumbers) {
  const char* text =
      "MemTotal:       1000 kB\nMemFree:         100 kB\nMemAvailable:    600 kB\n"
      "Buffers:          10 kB\nCached:          200 kB\nSwapCached:        0 kB\n"
      "SwapTotal:       512 kB\nSwapFree:        256 kB\nDirty:             4 kB\n"
      "Shmem:            64 kB\nHugePages_Total:       4\n";
  auto all = parse_meminfo(text);
  auto named = parse_meminfo(text, MeminfoFields::kNamed);
  ASSERT_TRUE(all && named);
  EXPECT_EQ(named->total_bytes, all->total_bytes);
  EXPECT_EQ(named->free_bytes, all->free_bytes);
  EXPECT_EQ(named->available_bytes, 600U * 1024);
  EXPECT_EQ(named->swap_total_bytes, 512U * 1024);
  EXPECT_EQ(named->swap_free_bytes, 256U * 1024);
  EXPECT_EQ(named->shmem_bytes, 64U * 1024);
  EXPECT_TRUE(named->fields.empty());
  EXPECT_EQ(all->fields.size(), 11U);
  // Lines it does not read are not judged: a kernel's new line in a new form, or a line
  // after the eight, does not fail the sample.
  const std::string odd = std::string(text) + "Hugetlb: odd\n";
  EXPECT_FALSE(parse_meminfo(odd));
  auto tolerant = parse_meminfo(odd, MeminfoFields::kNamed);
  ASSERT_TRUE(tolerant) << tolerant.error().message;
  EXPECT_EQ(tolerant->available_bytes, 600U * 1024);
  // A named line in a bad form still fails it.
  EXPECT_FALSE(parse_meminfo("MemTotal: lots kB\n", MeminfoFields::kNamed));
  // No MemAvailable (before 3.14): the estimate, from the lines read.
  auto old = parse_meminfo("MemTotal: 1000 kB\nMemFree: 100 kB\nBuffers: 10 kB\nCached: 200 kB\n",
                           MeminfoFields::kNamed);
  ASSERT_TRUE(old);
  EXPECT_TRUE(old->available_estimated);
  EXPECT_EQ(old->available_bytes, 310U * 1024);
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
