// The two-stage literal scan (literal_scanner.h, analyzer.cc CompiledCatalog::stages): the
// first stage leaves out the literals only location hints and markers have, and what it
// leaves out must never change an answer. Each analyzer test builds a log whose lines lie
// past the head of the source (where every line is read anyway), feeds it as explain feeds a
// large file (scan_block on each chunk, then feed_scanned) and compares with one scan of all
// the literals (feed); each also checks the answer itself, so that it fails if the scheme
// dropped the hit it is about.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/explain/render.h"
#include "core/signatures/analyze.h"
#include "core/signatures/literal_scanner.h"

namespace headroom {
namespace {

using testing::analyze_text;
using testing::builtin_compiled;

/// The lines of a block whose one-stage hits the two-stage scan must give: those a first-stage
/// literal is on, the last `tail_lines`, and all from `tail_lines` above a `whole` literal.
TEST(TwoStageScan, GivesTheOneStageHitsOfEveryLineItLooksAt) {
  const std::vector<std::string> literals = {
      "Killed process ", "Killed", "\n/tmp/", " /tmp\n", "No space left on device", "/tmp/"};
  LiteralScanner::Stages stages;
  stages.first = {0, 1, 4};
  stages.whole = {4};
  stages.tail_lines = 3;
  LiteralScanner one(literals);
  LiteralScanner two(literals, stages);
  if (!two.two_stage()) GTEST_SKIP() << "no Hyperscan: one stage";
  {
    BlockScan before;  // not prepared yet: one stage
    BlockScan want;
    const std::string text = "Killed\nNo\n/tmp/\n" + std::string(10, '\n');
    two.scan_block(text, before);
    one.scan_block(text, want);
    EXPECT_EQ(before.hits.size(), want.hits.size());
    EXPECT_TRUE(before.complete);
  }
  two.prepare();
  std::mt19937 random(23);
  int partial = 0;
  for (int round = 0; round < 300; ++round) {
    std::string text;
    const int lines = static_cast<int>(random() % 40);
    for (int line = 0; line < lines; ++line) {
      text.append(random() % 30, static_cast<char>('a' + random() % 26));
      if (random() % 3 == 0) {
        // Rarely the literal that has the whole block scanned.
        const std::size_t others[] = {0, 1, 2, 3, 5};
        text += literals[random() % 12 == 0 ? 4 : others[random() % 5]];
      }
      if (random() % 2 == 0) text += "\r";
      text += '\n';
    }
    if (random() % 2 == 0) text += "/tmp/ unfinished";
    BlockScan want;
    one.scan_block(text, want);
    BlockScan got;
    two.scan_block(text, got);
    EXPECT_EQ(got.newlines, want.newlines);
    // The first line every line after which gets all its hits: the last three, or three
    // above the first "No space left on device".
    std::uint64_t full = want.newlines <= 3 ? 0 : want.newlines - 3;
    std::set<std::uint64_t> looked_at;
    for (const LiteralHit& hit : want.hits) {
      if (hit.literal <= 1) looked_at.insert(hit.newlines);
      if (hit.literal == 4) full = std::min(full, hit.newlines < 3 ? 0 : hit.newlines - 3);
    }
    std::vector<std::tuple<std::size_t, std::size_t, std::uint64_t>> expected;
    for (const LiteralHit& hit : want.hits) {
      if (hit.newlines >= full || looked_at.count(hit.newlines) != 0)
        expected.emplace_back(hit.at, hit.literal, hit.newlines);
    }
    std::vector<std::tuple<std::size_t, std::size_t, std::uint64_t>> found;
    for (const LiteralHit& hit : got.hits) found.emplace_back(hit.at, hit.literal, hit.newlines);
    EXPECT_EQ(found, expected) << text;
    EXPECT_EQ(got.complete, full == 0) << text;
    if (!got.complete) ++partial;
    // all_lines: one scan of all the literals.
    two.scan_block(text, got, /*all_lines=*/true);
    EXPECT_EQ(got.hits.size(), want.hits.size());
    EXPECT_TRUE(got.complete);
  }
  EXPECT_GT(partial, 100);  // the two-stage path ran
}

TEST(TwoStageScan, TheBuiltInCatalogScansInTwoStages) {
  if (!builtin_compiled()) GTEST_SKIP();
  LogAnalyzer analyzer(builtin_compiled());
  LiteralScanner scanner = analyzer.literal_scanner();
  if (scanner.engine() != "hyperscan") GTEST_SKIP() << "no Hyperscan: one stage";
  EXPECT_TRUE(scanner.two_stage());
}

/// Neutral lines (no literal of the catalog on them) up to at least `bytes`.
std::string filler(std::size_t bytes, const std::string& tag) {
  std::string text;
  for (int step = 0; text.size() < bytes; ++step)
    text += "[rank0]: step " + std::to_string(step) + " " + tag + " loss 0.25 lr 1e-4\n";
  return text;
}

constexpr std::size_t kChunk = 64 * 1024;

/// `text` fed as explain feeds a large plain file: its first kChunk bytes with feed, then
/// kChunk-byte chunks scanned by the literal scanner and given to feed_scanned.
std::string two_stage_json(const std::string& text) {
  LogAnalyzer analyzer(builtin_compiled());
  analyzer.feed(std::string_view(text).substr(0, kChunk));
  EXPECT_TRUE(analyzer.passes_through());
  LiteralScanner scanner = analyzer.literal_scanner();
  scanner.prepare();
  for (std::size_t at = kChunk; at < text.size(); at += kChunk) {
    const std::string_view chunk = std::string_view(text).substr(at, kChunk);
    BlockScan scan;
    scanner.scan_block(chunk, scan);
    analyzer.feed_scanned(chunk, scan);
  }
  return explain_to_json(analyzer.finish(), HostConfirmation{}, {}).dump();
}

std::string one_stage_json(const std::string& text) {
  return explain_to_json(analyze_text(text), HostConfirmation{}, {}).dump();
}

/// filler past the head, then `before` ending `gap` bytes before a chunk boundary, `after`
/// right after it, and more filler.
std::string across_boundary(const std::string& before, const std::string& after,
                            std::size_t gap = 0) {
  std::string text = filler(1024 * 1024 + 3 * kChunk, "a");
  const std::size_t boundary = (text.size() / kChunk + 2) * kChunk;
  std::string pad = filler(boundary - text.size() - before.size() - gap, "b");
  pad.resize(boundary - text.size() - before.size() - gap);  // cut the last line short...
  pad.back() = '\n';                                         // ...and end it
  text += pad + before;
  text += std::string(gap, '\n') + after + filler(3 * kChunk, "c");
  EXPECT_EQ(text.find(after), boundary + 0);
  return text;
}

std::string verdict_of(const std::string& json) {
  return nlohmann::json::parse(json)["verdict"]["cause"].get<std::string>();
}

// A /tmp path (a location hint, left out by the first stage) at the end of one chunk and the
// error it places at the start of the next: the hint is in the block's last lines.
TEST(TwoStageScan, AHintInTheLastLinesOfAChunkPlacesAnErrorInTheNext) {
  const std::string text = across_boundary("copying shards to /tmp/cache/shard-0001.bin\n",
                                           "OSError: [Errno 28] No space left on device\n");
  const std::string want = one_stage_json(text);
  EXPECT_EQ(verdict_of(want), "tmp_full");
  EXPECT_EQ(two_stage_json(text), want);
}

// The hint 30 lines above the error, both inside one chunk, in color: the error's literal has
// the whole chunk scanned.
TEST(TwoStageScan, AColoredHintAboveAnErrorInTheSameChunkCounts) {
  std::string lines = "\x1b[33m writing to /tmp/run-7/features.npy\x1b[0m\n";
  for (int i = 0; i < 30; ++i) lines += "  frame " + std::to_string(i) + " in loader\n";
  lines += "OSError: [Errno 28] No space left on device\n";
  const std::string text = across_boundary("", lines + filler(kChunk / 2, "d"));
  const std::string want = one_stage_json(text);
  EXPECT_EQ(verdict_of(want), "tmp_full");
  EXPECT_EQ(two_stage_json(text), want);
}

// The error at the end of a chunk and the hint a few lines below it, in the next chunk: the
// error waits for the lines below, so the next chunk is scanned whole before it is read.
TEST(TwoStageScan, AHintBelowAWaitingErrorInTheNextChunkCounts) {
  const std::string text = across_boundary("OSError: [Errno 28] No space left on device\n",
                                           "  while writing /tmp/cache/shard-0002.bin\n", 3);
  const std::string want = one_stage_json(text);
  EXPECT_EQ(verdict_of(want), "tmp_full");
  EXPECT_EQ(two_stage_json(text), want);
}

// A line the first stage finds gets all its hits: the first literal on it (a /tmp path the
// first stage does not look for) picks the '\r' segment the patterns see, so "Killed" in the
// segment after it is not read as the shell's report.
TEST(TwoStageScan, ARedrawnLineKeepsTheSegmentOfItsFirstLiteral) {
  const std::string text =
      across_boundary("", "cp /tmp/a.bin /data/a.bin\rKilled\n" + filler(kChunk, "e"));
  const std::string want = one_stage_json(text);
  EXPECT_EQ(verdict_of(want), "unknown");  // not host_oom: "Killed" is not read
  EXPECT_EQ(two_stage_json(text), want);
}

// In the head of a source every line is read, and the first literal on a line picks the '\r'
// segment that a listing's pattern sees: a /tmp path (which the first stage does not look for)
// keeps the ipcs line after it from being read as a left-over System V segment.
TEST(TwoStageScan, InTheHeadEveryLineHasAllItsHits) {
  std::string text = filler(300 * 1024, "g");
  text += "cp /tmp/x.bin /data/\r0x00000000 32768      root       600        67108864   0\n" +
          filler(900 * 1024, "h");
  const std::string want = one_stage_json(text);
  EXPECT_EQ(verdict_of(want), "unknown");
  EXPECT_EQ(two_stage_json(text), want);
}

// A colored shell report, far from any hint: found by the first stage as it is.
TEST(TwoStageScan, AColoredKilledLineIsFound) {
  const std::string text = across_boundary("", "\x1b[1mKilled\x1b[0m\n" + filler(kChunk, "f"));
  const std::string want = one_stage_json(text);
  EXPECT_EQ(verdict_of(want), "host_oom");
  EXPECT_EQ(two_stage_json(text), want);
}

}  // namespace
}  // namespace headroom
