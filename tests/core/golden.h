#pragma once
// Golden files under tests/golden/: HEADROOM_UPDATE_GOLDEN=1 rewrites them, so
// a change of output shows as a reviewed diff.

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace headroom::testing {

inline void expect_golden(const std::string& name, const std::string& actual) {
  const std::string path = std::string(HEADROOM_TEST_DATA) + "/golden/" + name;
  if (const char* update = std::getenv("HEADROOM_UPDATE_GOLDEN"); update && *update == '1') {
    std::ofstream(path) << actual;
    return;
  }
  std::ifstream file(path);
  ASSERT_TRUE(file) << "missing golden file " << path << " (run with HEADROOM_UPDATE_GOLDEN=1)";
  std::stringstream expected;
  expected << file.rdbuf();
  EXPECT_EQ(actual, expected.str()) << "golden " << name << " differs";
}

}  // namespace headroom::testing
