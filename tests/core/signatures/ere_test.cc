// The catalog as POSIX ERE (`headroom explain --dump-patterns`, the benchmark
// peer's `grep -E -f`): RE2 escapes inside brackets must keep their meaning in
// GNU grep, which reads one line at a time.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/signatures/analyzer.h"
#include "core/signatures/catalog.h"

namespace headroom {
namespace {

std::string ere(std::string pattern) {
  Catalog catalog;
  Signature signature;
  signature.id = "test";
  signature.patterns = {std::move(pattern)};
  catalog.signatures.push_back(signature);
  std::string out = patterns_as_ere(catalog);
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

/// Whether GNU grep -E matches `line` with `pattern` (exit 0), or reports an error (2).
int grep(const std::string& pattern, const std::string& line) {
  // ctest runs these tests as parallel processes: one file per process and
  // call, in the build tree (never the host's /tmp).
  static int calls = 0;
  const std::string file = std::filesystem::current_path().string() + "/ere_test_pattern." +
                           std::to_string(::getpid()) + "." + std::to_string(++calls);
  std::ofstream(file) << pattern << "\n";
  const std::string command = "printf '%s\\n' '" + line + "' | LC_ALL=C grep -qE -f " + file;
  const int status = std::system(command.c_str());
  std::remove(file.c_str());
  return WEXITSTATUS(status);
}

TEST(Ere, NewlineInANegatedClassIsAnyCharacterOfTheLine) {
  EXPECT_EQ(ere(R"(ckpt: [^\n]+ failed)"), "ckpt: .+ failed");
  EXPECT_EQ(ere(R"(x[^\n"]*y)"), R"(x[^"]*y)");
  EXPECT_EQ(grep(ere(R"(ckpt: [^\n]+ failed)"), "ckpt: /data/n n failed"), 0);
}

TEST(Ere, BracketCaretAndDashEscapesLandWhereEreNeedsThem) {
  EXPECT_EQ(ere(R"([\]a\-])"), "[]a-]");
  EXPECT_EQ(ere(R"([\^a])"), "[a^]");
  EXPECT_EQ(ere(R"([\d\s])"), "[0-9[:space:]]");
  EXPECT_EQ(grep(ere(R"(id=[\]\-\d]+)"), "id=]-42"), 0);
  EXPECT_EQ(grep(ere(R"(id=[\]\-\d]+)"), "id=abc"), 1);
}

TEST(Ere, AClassOfOnlyANewlineNeverMatchesAndStaysValid) {
  EXPECT_EQ(grep(ere(R"(a[\n]b)"), "a b"), 1);
  EXPECT_EQ(grep(ere(R"(a[\n]b)"), "ab"), 1);
}

TEST(Ere, EveryBuiltInPatternIsValidForGrep) {
  auto catalog = load_catalog({});
  ASSERT_TRUE(catalog.has_value());
  const std::string file =
      std::filesystem::current_path().string() + "/ere_test_catalog." + std::to_string(::getpid());
  std::ofstream(file) << patterns_as_ere(*catalog);
  const std::string command = "echo x | LC_ALL=C grep -E -f " + file + " >/dev/null";
  const int status = std::system(command.c_str());
  std::remove(file.c_str());
  EXPECT_NE(WEXITSTATUS(status), 2) << "grep rejected an exported pattern";
}

/// `headroom explain --dump-literals`: one literal a line, a newline and a backslash escaped,
/// so that a literal asking for a line start ("\n/tmp/") stays one line.
TEST(Ere, LiteralsAreOneALineWithNewlinesAndBackslashesEscaped) {
  Catalog catalog;
  Signature signature;
  signature.id = "test";
  signature.patterns = {R"(No space left on device)", R"(cannot write to C:\\spool)"};
  signature.literals = {"No space left on device", "\n/scratch/", "C:\\spool"};
  catalog.signatures.push_back(signature);
  EXPECT_EQ(literals_as_lines(catalog), "No space left on device\n\\n/scratch/\nC:\\\\spool\n");
}

TEST(Ere, EveryBuiltInLiteralIsListed) {
  auto catalog = load_catalog({});
  ASSERT_TRUE(catalog.has_value());
  const std::string lines = literals_as_lines(*catalog);
  EXPECT_GT(std::count(lines.begin(), lines.end(), '\n'), 100);
  EXPECT_NE(lines.find("No space left on device\n"), std::string::npos);
}

}  // namespace
}  // namespace headroom
