#include "core/kernel/pressure.h"

#include <gtest/gtest.h>

#include "core/fixture_context.h"

namespace headroom {
namespace {

TEST(ParsePressure, ReadsSomeAndFull) {
  auto pressure = parse_pressure(
      "some avg10=12.50 avg60=3.25 avg300=0.80 total=123456789\n"
      "full avg10=41.00 avg60=2.00 avg300=0.10 total=98765\n");
  ASSERT_TRUE(pressure) << pressure.error().message;
  EXPECT_DOUBLE_EQ(pressure->some.avg10, 12.5);
  EXPECT_DOUBLE_EQ(pressure->some.avg300, 0.8);
  EXPECT_EQ(pressure->some.total_us, 123456789U);
  ASSERT_TRUE(pressure->full);
  EXPECT_DOUBLE_EQ(pressure->full->avg10, 41.0);
}

TEST(ParsePressure, FullIsOptional) {
  // The cpu file had no "full" line before Linux 5.13.
  auto pressure = parse_pressure("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
  ASSERT_TRUE(pressure);
  EXPECT_FALSE(pressure->full);
}

TEST(ParsePressure, RejectsMalformedInput) {
  EXPECT_FALSE(parse_pressure(""));
  EXPECT_FALSE(parse_pressure("full avg10=1.00 avg60=0.00 avg300=0.00 total=0\n"));
  EXPECT_FALSE(parse_pressure("some avg10=x avg60=0.00 avg300=0.00 total=0\n"));
  EXPECT_FALSE(parse_pressure("some avg10=1.00\n"));
}

TEST(ReadPressure, MissingFileIsAnError) {
  testing::FakeSyscalls syscalls;
  auto missing = read_pressure(testing::fixture_context("bare_host", syscalls), "nonexistent");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, Error::Code::kNotFound);
  EXPECT_TRUE(read_pressure(testing::fixture_context("bare_host", syscalls), "memory"));
}

}  // namespace
}  // namespace headroom
