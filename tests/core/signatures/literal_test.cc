#include "core/signatures/literal.h"

#include <gtest/gtest.h>

namespace headroom {
namespace {

TEST(RequiredLiteral, TakesTheLongestPlainRun) {
  const struct {
    const char* pattern;
    const char* literal;
  } cases[] = {
      {R"(DataLoader worker \(pid (?P<pid>\d+)\) is killed by signal: Bus error)",
       ") is killed by signal: Bus error"},
      {R"(DataLoader worker \(pid (?P<pid>\d+)\) is killed by signal: (?P<signal>Killed))",
       "DataLoader worker (pid "},
      {R"(Killed process (?P<killed_pid>\d+) \()", "Killed process "},
      {R"(\[Errno 28\] No space left on device(?:: '(?P<path>[^']*)')?)",
       "[Errno 28] No space left on device"},
      {R"(^MemoryError\b)", "MemoryError"},
      {R"(abcd?efgh)", "efgh"},  // 'd' is optional, so "abc" and "efgh" are separate runs
      {R"(ab+cdefg)", "cdefg"},  // "ab" then a repeat: the run ends after one b
      {R"(x[abc]yyyyy)", "yyyyy"},
      {R"(Exit Code:\s+137)", "Exit Code:"},
      {R"(foo|barbazqux)", ""},           // top-level alternation: nothing is required
      {R"((?i)cuda out of memory)", ""},  // case folding: a literal would miss
  };
  for (const auto& c : cases) EXPECT_EQ(required_literal(c.pattern), c.literal) << c.pattern;
}

}  // namespace
}  // namespace headroom
