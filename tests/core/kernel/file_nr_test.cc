#include "core/kernel/file_nr.h"

#include <gtest/gtest.h>

#include "core/fixture_context.h"
#include "core/scratch_root.h"

namespace headroom {
namespace {

TEST(ParseFileNr, ReadsAllocatedUnusedAndMax) {
  auto file_nr = parse_file_nr("1958\t0\t2466177\n");
  ASSERT_TRUE(file_nr) << file_nr.error().message;
  EXPECT_EQ(file_nr->allocated, 1958U);
  EXPECT_EQ(file_nr->unused, 0U);
  EXPECT_EQ(file_nr->max, 2466177U);
  EXPECT_NEAR(file_nr->used_percent(), 0.0794, 0.0001);
}

TEST(ParseFileNr, TakesTheLongMaxOfNewKernels) {
  auto file_nr = parse_file_nr("1024\t0\t9223372036854775807\n");
  ASSERT_TRUE(file_nr);
  EXPECT_EQ(file_nr->max, 9223372036854775807U);
  EXPECT_LT(file_nr->used_percent(), 1e-10);
}

TEST(ParseFileNr, RejectsMissingFields) {
  EXPECT_FALSE(parse_file_nr("1958\t0\n"));
  EXPECT_FALSE(parse_file_nr(""));
  EXPECT_FALSE(parse_file_nr("a b c"));
}

TEST(ReadFileNr, ReadsTheRecordedHost) {
  testing::FakeSyscalls syscalls;
  auto file_nr = read_file_nr(testing::fixture_context("bare_host", syscalls));
  ASSERT_TRUE(file_nr) << file_nr.error().message;
  EXPECT_EQ(file_nr->allocated, 1958U);
  EXPECT_EQ(file_nr->max, 2466177U);
}

TEST(ReadFileNr, NamesThePathWhenMissing) {
  testing::FakeSyscalls syscalls;
  const testing::ScratchRoot empty;
  auto file_nr = read_file_nr(empty.context(syscalls));
  ASSERT_FALSE(file_nr);
  EXPECT_EQ(file_nr.error().code, Error::Code::kNotFound);
  EXPECT_NE(file_nr.error().message.find("proc/sys/fs/file-nr"), std::string::npos);
}

}  // namespace
}  // namespace headroom
