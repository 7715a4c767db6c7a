#include "core/signatures/prefilter.h"

#include <gtest/gtest.h>

#include <algorithm>
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

// scan_block, with either engine: every occurrence wholly inside the block once, across the
// 256 KiB pieces it scans, with the lines before it; a literal that starts with '\n' is
// reported where its line starts, and at the block's start too.
TEST(LiteralScanner, ScanBlockFindsEachOccurrenceOnceWithItsLine) {
  const std::vector<std::string> literals = {"Killed process ", "Killed", "\n/tmp/",
                                             "No space left on device", " /tmp\n"};
  for (const auto engine : {LiteralScanner::Engine::kBest, LiteralScanner::Engine::kPortable}) {
    LiteralScanner scanner(literals, engine);
    std::mt19937 random(17);
    for (int round = 0; round < 4; ++round) {
      std::string text = round % 2 == 0 ? "/tmp/x\n" : "";
      while (text.size() < 700 * 1024) {
        text.append(random() % 300, static_cast<char>('a' + random() % 26));
        if (random() % 5 == 0) text += '\n';
        if (random() % 4 == 0) text += literals[random() % literals.size()];
        // Pieces start every 256 KiB: put occurrences across their edges.
        const std::size_t edge = (text.size() / (256 * 1024) + 1) * 256 * 1024;
        if (random() % 3 == 0 && edge - text.size() < 300)
          text.append(edge - text.size() - 3, 'q') += literals[random() % literals.size()];
      }
      std::set<std::pair<std::size_t, std::size_t>> expected;
      for (const auto& [at, literal] : naive(literals, text))
        expected.insert({at + (literals[literal].front() == '\n' ? 1 : 0), literal});
      if (text.starts_with("/tmp/")) expected.insert({0, 2});
      BlockScan scan;
      scanner.scan_block(text, scan);
      std::set<std::pair<std::size_t, std::size_t>> got;
      for (const LiteralHit& hit : scan.hits) {
        EXPECT_TRUE(got.insert({hit.at, hit.literal}).second) << "twice at " << hit.at;
        EXPECT_EQ(hit.newlines,
                  static_cast<std::uint64_t>(std::count(
                      text.begin(), text.begin() + static_cast<std::ptrdiff_t>(hit.at), '\n')));
      }
      EXPECT_EQ(got, expected) << scanner.engine();
      EXPECT_EQ(scan.newlines,
                static_cast<std::uint64_t>(std::count(text.begin(), text.end(), '\n')));
      EXPECT_TRUE(std::is_sorted(scan.hits.begin(), scan.hits.end()));
    }
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
