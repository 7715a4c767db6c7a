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
      {"May 12 03:14:07 gpu-7 kernel: [ 2893.596762] Memory cgroup out of memory",
       "Memory cgroup out of memory"},
      {"[2024-03-02 11:20:33,201] [INFO] saving", "[INFO] saving"},
      {"[pod/trainer-0/main] Killed process 12 (python)", "Killed process 12 (python)"},
      {"2024-04-02T07:19:11.302308812Z stderr F MemoryError", "MemoryError"},  // CRI log file
      {"(MapWorker(MapBatches(tokenize)) pid=4411, ip=10.0.0.5) MemoryError",
       "MemoryError"},  // Ray
      {"(raylet, ip=10.0.0.5) [2024-05-09 13:02:41,771 E 22890 22890] x", "x"},
      {R"({"log":"MemoryError: cut sh)",
       "MemoryError: cut sh"},  // docker json-file record cut short
      {"2024-05-01T12:00:00.123456789Z RuntimeError: x",
       "RuntimeError: x"},  // kubectl logs --timestamps
      {"2024-05-01T12:00:00.123456789Z   File \"/app/x.py\", line 1",
       "  File \"/app/x.py\", line 1"},
      {"2024-05-01T12:00:00+0000 gpu-7 python3[1234]: OSError: [Errno 28] x",
       "OSError: [Errno 28] x"},  // journalctl -o short-iso
      {"2024-05-01T12:00:00.000123+02:00 gpu-7 kernel: Out of memory: Killed process 9",
       "Out of memory: Killed process 9"},
      {"2024-05-01T12:00:00+0000 gpu-7 systemd[1]: train.service: Main process exited",
       "train.service: Main process exited"},
      {"2024-04-02T07:19:11.302274010Z stderr F   File \"/app/x.py\", line 1",
       "  File \"/app/x.py\", line 1"},
      {"  File \"train.py\", line 3",
       "  File \"train.py\", line 3"},  // indentation of tracebacks stays
  };
  for (const auto& c : cases) EXPECT_EQ(strip_prefixes(c.raw), c.rest) << c.raw;
}

TEST(NormalizeLine, DecodesADockerJsonFileRecord) {
  // Go's encoder escapes quotes, backslashes, control characters and <, >, &.
  const std::string record =
      R"({"log":"\u001b[31m  File \"/app/train.py\", line 9, in \u003cmodule\u003e\u001b[0m\n","stream":"stderr","time":"2024-06-20T04:12:40.0031Z"})";
  EXPECT_EQ(normalize_line(record, 10), "  File \"/app/train.py\", line 9, in <module>");
  EXPECT_EQ(normalize_line(R"({"log":"C:\\data\tOSError: x\n","stream":"stdout"})", 0),
            "C:\\data\tOSError: x");
  // Prefixes inside the record go too: a launcher's rank prefix, a timestamp.
  EXPECT_EQ(normalize_line(R"({"log":"[rank1]: MemoryError\n","stream":"stderr","time":"t"})", 0),
            "MemoryError");
}

TEST(NormalizeLine, PicksTheRedrawnSegmentOfTheHitInsideADockerRecord) {
  const std::string record =
      R"({"log":"\r 10%|#  | 1/10\r 20%|## | 2/10Killed\n","stream":"stderr","time":"t"})";
  EXPECT_EQ(normalize_line(record, record.find("Killed")), " 20%|## | 2/10Killed");
  EXPECT_EQ(normalize_line(record, record.find("10%")), " 10%|#  | 1/10");
}

TEST(NormalizeLine, LeavesALineThatIsNotValidJsonAsItIs) {
  // Not decoded (the escapes stay); only the record's opening is dropped, as for one cut short.
  EXPECT_EQ(normalize_line(R"({"log":"MemoryError\n", broken})", 0), R"(MemoryError\n", broken})");
  EXPECT_EQ(normalize_line(R"({"level":"error","msg":"x"})", 0), R"({"level":"error","msg":"x"})");
}

TEST(PrintableUtf8, ReplacesInvalidBytesAndCutsOnCharacterBoundaries) {
  EXPECT_EQ(printable_utf8("ok \xff\xfe \xc3\x28", 100), "ok ?? ?(");
  EXPECT_EQ(printable_utf8("h\xc3\xa9llo", 3), "h\xc3\xa9...");
}

}  // namespace
}  // namespace headroom
