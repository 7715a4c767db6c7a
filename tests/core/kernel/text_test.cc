#include "core/kernel/text.h"

#include <gtest/gtest.h>

#include <clocale>

namespace headroom {
namespace {

TEST(ParseDecimal, ReadsWhatTheKernelPrints) {
  EXPECT_DOUBLE_EQ(*parse_decimal("12.34"), 12.34);
  EXPECT_DOUBLE_EQ(*parse_decimal("0.00"), 0.0);
  EXPECT_DOUBLE_EQ(*parse_decimal("100.00"), 100.0);
  EXPECT_DOUBLE_EQ(*parse_decimal("7"), 7.0);
  EXPECT_DOUBLE_EQ(*parse_decimal("0.125"), 0.125);
}

TEST(ParseDecimal, RejectsAnythingElse) {
  for (const char* text : {"", ".", "1.", ".5", "-1.00", "+1", "1.2.3", "1,5", "1e3", "nan", " 1",
                           "1.0000000000000000001"}) {
    EXPECT_FALSE(parse_decimal(text)) << text;
  }
}

TEST(ParseDecimal, IgnoresTheLocale) {
  // A Python caller may have set a locale whose decimal point is ','.
  const char* german = std::setlocale(LC_NUMERIC, "de_DE.UTF-8");
  EXPECT_DOUBLE_EQ(*parse_decimal("41.50"), 41.5);
  if (german != nullptr) std::setlocale(LC_NUMERIC, "C");
}

}  // namespace
}  // namespace headroom
