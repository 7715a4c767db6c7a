#include "core/units.h"

#include <gtest/gtest.h>

namespace headroom {
namespace {

TEST(ParseSize, AcceptsBinaryAndDecimalSuffixes) {
  const struct {
    const char* text;
    std::uint64_t bytes;
  } cases[] = {
      {"4096", 4096},         {"64k", 65536},         {"32MiB", 32 * kMiB},
      {"32mib", 32 * kMiB},   {"1.5G", 3 * kGiB / 2}, {"2GB", 2'000'000'000},
      {"1 TiB", 1024 * kGiB}, {"512B", 512},          {"96m", 96 * kMiB},
  };
  for (const auto& c : cases) {
    auto parsed = parse_size(c.text);
    ASSERT_TRUE(parsed) << c.text << ": " << parsed.error().message;
    EXPECT_EQ(*parsed, c.bytes) << c.text;
  }
}

TEST(ParseSize, RejectsUnknownUnitsAndNegatives) {
  for (const char* text : {"12XB", "-5MiB", "", "MiB", "1.2.3G", "abc"}) {
    auto parsed = parse_size(text);
    ASSERT_FALSE(parsed) << text;
    EXPECT_EQ(parsed.error().code, Error::Code::kInvalidArgument);
    EXPECT_NE(parsed.error().message.find("size"), std::string::npos);
  }
  EXPECT_NE(parse_size("12XB").error().message.find("unknown unit 'xb'"), std::string::npos);
}

TEST(ParseDuration, AcceptsCompoundDurations) {
  EXPECT_EQ(*parse_duration("5s"), std::chrono::seconds(5));
  EXPECT_EQ(*parse_duration("10m"), std::chrono::minutes(10));
  EXPECT_EQ(*parse_duration("1h30m"), std::chrono::minutes(90));
  EXPECT_EQ(*parse_duration("250ms"), std::chrono::milliseconds(250));
  EXPECT_EQ(*parse_duration("2"), std::chrono::seconds(2));
  EXPECT_FALSE(parse_duration("5 weeks"));
  EXPECT_FALSE(parse_duration("-1s"));
}

TEST(FormatBytes, UsesBinaryUnitsWithOneDecimal) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(64 * kMiB), "64.0 MiB");
  EXPECT_EQ(format_bytes(3 * kGiB / 2), "1.5 GiB");
}

TEST(FormatCount, PluralUnlessOne) {
  EXPECT_EQ(format_count(1, "rank"), "1 rank");
  EXPECT_EQ(format_count(0, "worker"), "0 workers");
  EXPECT_EQ(format_count(8, "worker"), "8 workers");
}

TEST(FormatDockerSize, RoundsUp) {
  EXPECT_EQ(format_docker_size(96 * kMiB + 1), "97m");
  EXPECT_EQ(format_docker_size(10 * kGiB), "10g");
  EXPECT_EQ(format_k8s_quantity(563 * kMiB), "563Mi");
}

TEST(FormatSetting, SaysADurationAsAFlagWould) {
  using std::chrono::milliseconds;
  EXPECT_EQ(format_setting(milliseconds(200)), "200ms");
  EXPECT_EQ(format_setting(milliseconds(0)), "0s");
  EXPECT_EQ(format_setting(milliseconds(5000)), "5s");
  EXPECT_EQ(format_setting(milliseconds(600000)), "10m");
  EXPECT_EQ(format_setting(milliseconds(3600000)), "1h");
  EXPECT_EQ(format_setting(milliseconds(90000)), "1m 30s");
  EXPECT_EQ(format_setting(milliseconds(1500)), "1500ms");
}

TEST(FormatDuration, PicksTheTwoLargestUnits) {
  EXPECT_EQ(format_duration(std::chrono::seconds(45)), "45s");
  EXPECT_EQ(format_duration(std::chrono::seconds(3600 * 3 + 20 * 60)), "3h 20m");
  EXPECT_EQ(format_duration(std::chrono::seconds(86400 * 2 + 3600 * 4)), "2d 4h");
}

}  // namespace
}  // namespace headroom
