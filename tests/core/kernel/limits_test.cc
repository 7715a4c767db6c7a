#include "core/kernel/limits.h"

#include <gtest/gtest.h>

#include "core/fixture_context.h"
#include "core/scratch_root.h"

namespace headroom {
namespace {

using testing::FakeSyscalls;

// Recorded from this machine (fs/proc/base.c layout: 25-column names).
constexpr std::string_view kLimits =
    "Limit                     Soft Limit           Hard Limit           Units     \n"
    "Max cpu time              unlimited            unlimited            seconds   \n"
    "Max open files            1024                 524288               files     \n"
    "Max nice priority         0                    0                    \n"
    "Max realtime timeout      unlimited            unlimited            us        \n";

TEST(ParseLimits, ReadsNamesWithSpacesNumbersAndUnlimited) {
  auto rows = parse_limits(kLimits);
  ASSERT_TRUE(rows) << rows.error().message;
  ASSERT_EQ(rows->size(), 4U);
  EXPECT_EQ((*rows)[0].name, "Max cpu time");
  EXPECT_EQ((*rows)[0].limit.soft, Limit::kUnlimited);
  EXPECT_EQ((*rows)[1].units, "files");
  const auto nofile = find_limit(*rows, "Max open files");
  ASSERT_TRUE(nofile);
  EXPECT_EQ(nofile->soft, 1024U);
  EXPECT_EQ(nofile->hard, 524288U);
}

TEST(ParseLimits, AcceptsRowsWithoutUnits) {
  auto rows = parse_limits(kLimits);
  ASSERT_TRUE(rows);
  EXPECT_EQ((*rows)[2].name, "Max nice priority");
  EXPECT_EQ((*rows)[2].units, "");
  EXPECT_FALSE(find_limit(*rows, "Max open file"));
}

TEST(ParseLimits, RejectsGarbageWithTheLineNumber) {
  auto rows = parse_limits(
      "Limit                     Soft Limit           Hard Limit           Units\n"
      "Max open files            lots                 524288               files\n");
  ASSERT_FALSE(rows);
  EXPECT_EQ(rows.error().code, Error::Code::kParse);
  EXPECT_NE(rows.error().message.find("limits:2"), std::string::npos) << rows.error().message;
  EXPECT_FALSE(parse_limits("Max open files\n"));
}

TEST(ReadOpenFilesLimit, ReadsTheRecordedProcessLimits) {
  FakeSyscalls syscalls;
  const Context context = testing::fixture_context("fd_limit_256", syscalls);
  std::string source;
  auto limit = read_open_files_limit(context, source);
  ASSERT_TRUE(limit) << limit.error().message;
  EXPECT_EQ(limit->soft, 256U);
  EXPECT_EQ(limit->hard, 20000U);
  EXPECT_EQ(source, "/proc/self/limits");
}

TEST(ReadOpenFilesLimit, FallsBackToGetrlimitOnlyForSelf) {
  FakeSyscalls syscalls;
  syscalls.nofile_ = {4096, 8192};
  const testing::ScratchRoot empty;
  Context context = empty.context(syscalls);
  std::string source;
  auto limit = read_open_files_limit(context, source);
  ASSERT_TRUE(limit);
  EXPECT_EQ(limit->soft, 4096U);
  EXPECT_EQ(source, "getrlimit(RLIMIT_NOFILE)");
  context.pid = "4242";
  EXPECT_FALSE(read_open_files_limit(context, source));
}

}  // namespace
}  // namespace headroom
