// One rule for use% thresholds (core/thresholds.h): check, watch, run and Python share it,
// and its messages name the fields, which fronts say in their own words.

#include "core/thresholds.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/alerts/rules.h"
#include "core/checks/check.h"

namespace headroom {
namespace {

std::string error_of(PercentThresholds thresholds) {
  auto valid = thresholds.validate();
  return valid ? "" : valid.error().message;
}

TEST(PercentThresholds, RangesAndOrderNameTheirFields) {
  EXPECT_EQ(error_of({85, 95}), "");
  EXPECT_EQ(error_of({100, 100}), "");
  EXPECT_EQ(error_of({0, 95}), "warn_percent must be in (0, 100], got 0");
  EXPECT_EQ(error_of({85, 101}), "critical_percent must be in (0, 100], got 101");
  EXPECT_EQ(error_of({std::nan(""), 95}).rfind("warn_percent must be in (0, 100]", 0), 0U);
  EXPECT_EQ(error_of({99, 90}), "warn_percent (99) must not exceed critical_percent (90)");
}

TEST(PercentThresholds, CheckAndWatchGiveTheSameAnswer) {
  CheckOptions check;
  check.warn_percent = 99;
  check.critical_percent = 90;
  AlertConfig watch;
  watch.warn_percent = 99;
  watch.critical_percent = 90;
  auto from_check = validate(check);
  auto from_watch = validate(watch);
  ASSERT_FALSE(from_check);
  ASSERT_FALSE(from_watch);
  EXPECT_EQ(from_check.error().message, from_watch.error().message);
  EXPECT_EQ(from_check.error().code, Error::Code::kInvalidArgument);
}

}  // namespace
}  // namespace headroom
