#include "core/signatures/normalize.h"

#include <gtest/gtest.h>

namespace headroom {
namespace {

TEST(StripTerminal, RemovesAnsiEscapesAndNulBytes) {
  static const char kRaw[] = "\x1b[1;31mERROR\x1b[0m: bus\0 error\x1b]0;title\a!";
  const std::string raw(kRaw, sizeof kRaw - 1);
  EXPECT_EQ(strip_terminal(raw), "ERROR: bus error!");
}

TEST(CrSegment, KeepsTheRedrawnSegmentThatHoldsTheHit) {
  const std::string line = " 10%|#  | 1/10\r 20%|## | 2/10RuntimeError: boom\r\n";
  const std::size_t at = line.find("RuntimeError");
  EXPECT_EQ(cr_segment(line, at), " 20%|## | 2/10RuntimeError: boom");
  EXPECT_EQ(cr_segment("plain line\r", 0), "plain line");
}

TEST(StripPrefixes, DropsTimestampsRanksAndCollectorPrefixes) {
  const struct {
    const char* raw;
    const char* rest;
  } cases[] = {
      {"2024-05-01T10:00:00.123Z [rank3]: RuntimeError: x", "RuntimeError: x"},
      {"[rank12]:[default0]: KeyError: 1", "KeyError: 1"},
      {"May 12 03:14:07 gpu-7 kernel: [ 2893.596762] Memory cgroup out of memory", "Memory cgroup out of memory"},
      {"[2024-03-02 11:20:33,201] [INFO] saving", "[INFO] saving"},
      {"[pod/trainer-0/main] Killed process 12 (python)", "Killed process 12 (python)"},
      {"2024-04-02T07:19:11.302308812Z stderr F MemoryError", "MemoryError"},  // CRI log file
      {"(MapWorker(MapBatches(tokenize)) pid=4411, ip=10.0.0.5) MemoryError", "MemoryError"},  // Ray
      {"(raylet, ip=10.0.0.5) [2024-05-09 13:02:41,771 E 22890 22890] x", "x"},
      {R"({"log":"MemoryError\n","stream":"stderr"})", R"(MemoryError\n","stream":"stderr"})"},  // docker json-file
      {"2024-04-02T07:19:11.302274010Z stderr F   File \"/app/x.py\", line 1", "  File \"/app/x.py\", line 1"},
      {"  File \"train.py\", line 3", "  File \"train.py\", line 3"},  // indentation of tracebacks stays
  };
  for (const auto& c : cases) EXPECT_EQ(strip_prefixes(c.raw), c.rest) << c.raw;
}

TEST(PrintableUtf8, ReplacesInvalidBytesAndCutsOnCharacterBoundaries) {
  EXPECT_EQ(printable_utf8("ok \xff\xfe \xc3\x28", 100), "ok ?? ?(");
  EXPECT_EQ(printable_utf8("h\xc3\xa9llo", 3), "h\xc3\xa9...");
}

}  // namespace
}  // namespace headroom
