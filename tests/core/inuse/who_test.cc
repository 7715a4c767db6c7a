// who() over a recorded tree: the holders of /dev/shm's files by fd, by a map whose fd
// was closed, and of a file unlinked while mapped; the text and JSON of one answer.

#include "core/inuse/who.h"

#include <gtest/gtest.h>

#include <set>

#include "core/fixture_context.h"
#include "core/golden.h"
#include "core/inuse/render.h"

namespace headroom {
namespace {

using testing::FakeSyscalls;
using testing::fixture_context;

TEST(Who, FindsEveryKindOfHolderUnderAPathAndRendersOneAnswer) {
  FakeSyscalls syscalls;
  const Context context = fixture_context("shm_stale_mixed", syscalls);
  const std::vector<std::string> paths{"/dev/shm"};
  auto answer = who(context, paths, /*with_cmdline=*/true);
  ASSERT_TRUE(answer) << answer.error().message;
  ASSERT_TRUE(answer->any());
  std::set<int> pids;
  for (const Holder* holder : answer->holders(0)) pids.insert(holder->pid);
  EXPECT_EQ(pids, (std::set<int>{4100, 4101, 4102}));

  const std::string text = render_who_text(*answer, TextStyle{}, /*as_root=*/true);
  EXPECT_EQ(text.rfind("/dev/shm: held by 3 processes", 0), 0U) << text;
  EXPECT_NE(text.find("(deleted: still uses"), std::string::npos) << text;

  const auto json = who_to_json(*answer);
  ASSERT_EQ(json["paths"].size(), 1U);
  EXPECT_EQ(json["paths"][0]["given_path"], "/dev/shm");
  EXPECT_EQ(json["processes_scanned"], 3);
}

TEST(Who, AMissingPathIsAnErrorNamingIt) {
  FakeSyscalls syscalls;
  const Context context = fixture_context("shm_stale_mixed", syscalls);
  const std::vector<std::string> paths{"/dev/shm/no-such-segment"};
  auto answer = who(context, paths, false);
  ASSERT_FALSE(answer);
  EXPECT_NE(answer.error().message.find("no-such-segment"), std::string::npos)
      << answer.error().message;
}

/// The golden text and JSON of one answer (tests/golden/who.*).
TEST(Who, GoldenTextAndJson) {
  FakeSyscalls syscalls;
  const Context context = fixture_context("shm_stale_mixed", syscalls);
  const std::vector<std::string> paths{"/dev/shm"};
  auto answer = who(context, paths, /*with_cmdline=*/true);
  ASSERT_TRUE(answer) << answer.error().message;
  testing::expect_golden("who.txt", render_who_text(*answer, TextStyle{}, /*as_root=*/true));
  // Device and inode are those of this checkout's fixture files: the golden says where.
  auto json = who_to_json(*answer);
  for (auto& path : json["paths"]) {
    for (auto& holder : path["holders"]) {
      holder["device"] = "<device of the fixture file>";
      holder["inode"] = "<its inode>";
    }
  }
  testing::expect_golden("who.json", json.dump(2) + "\n");
}

}  // namespace
}  // namespace headroom
