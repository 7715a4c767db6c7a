#include "core/signatures/prefilter.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

#include "core/signatures/literal_scanner.h"

namespace headroom {
namespace {

/// Every occurrence, found the slow way.
std::set<std::pair<std::size_t, std::size_t>> naive(const std::vector<std::string>& literals,
                                                    const std::string& text) {
  std::set<std::pair<std::size_t, std::size_t>> found;
  for (std::size_t l = 0; l < literals.size(); ++l) {
    for (std::size_t at = text.find(literals[l]); at != std::string::npos;
         at = text.find(literals[l], at + 1)) {
      found.insert({at, l});
    }
  }
  return found;
}

TEST(LiteralPrefilter, FindsEveryOccurrenceAtAnyAlignment) {
  const std::vector<std::string> literals = {"Killed process ", "Bus error",
                                             "oom-kill:", "No space left on device"};
  LiteralPrefilter prefilter(literals);
  EXPECT_EQ(prefilter.stride(), 6U);  // shortest literal 9 bytes, 4-byte windows
  std::mt19937 random(7);
  for (int round = 0; round < 200; ++round) {
    std::string text;
    const int pieces = static_cast<int>(random() % 20);
    for (int p = 0; p < pieces; ++p) {
      text.append(random() % 13, static_cast<char>('a' + random() % 26));
      if (random() % 3 == 0) text += literals[random() % literals.size()];
    }
    std::set<std::pair<std::size_t, std::size_t>> got;
    prefilter.scan(text, [&](std::size_t at, std::size_t literal) { got.insert({at, literal}); });
    EXPECT_EQ(got, naive(literals, text)) << text;
  }
}

// The engine explain uses (Hyperscan where built in) finds the same occurrences as a naive
// search, with overlapping literals and at the block's edges.
TEST(LiteralScanner, FindsWhatANaiveSearchFinds) {
  const std::vector<std::string> literals = {"Killed process ", "Killed",
                                             "oom-kill:", "No space left on device", "space left"};
  LiteralScanner scanner(literals);
  std::mt19937 random(11);
  for (int round = 0; round < 200; ++round) {
    std::string text;
    const int pieces = static_cast<int>(random() % 20);
    for (int p = 0; p < pieces; ++p) {
      text.append(random() % 13, static_cast<char>('a' + random() % 26));
      if (random() % 3 == 0) text += literals[random() % literals.size()];
    }
    std::set<std::pair<std::size_t, std::size_t>> got;
    scanner.scan(text, [&](std::size_t at, std::size_t literal) { got.insert({at, literal}); });
    EXPECT_EQ(got, naive(literals, text)) << scanner.engine() << ": " << text;
  }
}

TEST(LiteralPrefilter, EmptySetFindsNothing) {
  LiteralPrefilter prefilter(std::vector<std::string>{});
  int hits = 0;
  prefilter.scan("Killed process 1", [&](std::size_t, std::size_t) { ++hits; });
  EXPECT_EQ(hits, 0);
}

}  // namespace
}  // namespace headroom
