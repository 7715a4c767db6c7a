// plan_clean's rules for the temp dir on a scratch root with an empty /proc
// (nobody holds anything): protected names, the owner filter, the age
// threshold, and the refusal of --all-users for non-root.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>

#include "core/reclaim/clean.h"
#include "core/reclaim/clean_rules.h"
#include "core/scratch_root.h"

namespace headroom {
namespace {

namespace fs = std::filesystem;
using testing::FakeSyscalls;
using testing::ScratchRoot;
using namespace std::chrono_literals;

class CleanPlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(root_.path() / "proc");
    syscalls_.now_ = std::chrono::system_clock::now();
    syscalls_.uid_ = 0;
    make("old-file", 3 * 24h, 0);
    make("young-file", 1h, 0);
    make("alice-old", 3 * 24h, 1000);
    make("systemd-private-abc-chronyd.service-x", 30 * 24h, 0, true);
    make(".X11-unix", 30 * 24h, 0, true);
    make("pymp-old", 2 * 24h, 0, true);
  }

  // An entry of the temp dir, `age` old, owned by `uid`.
  void make(const std::string& name, std::chrono::seconds age, uid_t uid, bool dir = false) {
    const fs::path path = root_.path() / "tmp" / name;
    fs::create_directories(path.parent_path());
    if (dir) {
      fs::create_directories(path);
    } else {
      std::ofstream(path) << "data";
    }
    ASSERT_EQ(::lchown(path.c_str(), uid, uid), 0);
    const auto when = std::chrono::system_clock::to_time_t(syscalls_.now_ - age);
    const timespec times[2] = {{when, 0}, {when, 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW), 0);
  }

  CleanPlan plan(const CleanOptions& options) {
    const Context context = root_.context(syscalls_);
    auto result = plan_clean(context, options);
    EXPECT_TRUE(result) << result.error().message;
    return result ? std::move(*result) : CleanPlan{};
  }

  static std::vector<std::string> planned(const CleanPlan& plan) {
    std::vector<std::string> names;
    for (const CleanItem& item : plan.items) names.push_back(item.name);
    std::sort(names.begin(), names.end());
    return names;
  }

  static std::string kept_reason(const CleanPlan& plan, const std::string& name) {
    for (const KeptItem& item : plan.kept) {
      if (item.path.filename() == name) return item.reason;
    }
    return "<not kept>";
  }

  static CleanOptions tmp_options() {
    CleanOptions options;
    options.tmp = true;
    options.tmp_dir = "/tmp";
    return options;
  }

  ScratchRoot root_;
  FakeSyscalls syscalls_;
};

TEST_F(CleanPlanTest, DefaultsToOwnFilesOlderThanADayAndNeverProtectedNames) {
  const CleanPlan result = plan(tmp_options());
  EXPECT_EQ(planned(result), (std::vector<std::string>{"old-file", "pymp-old"}));
  EXPECT_NE(kept_reason(result, "young-file").find("younger than 1d"), std::string::npos)
      << kept_reason(result, "young-file");
  EXPECT_NE(kept_reason(result, ".X11-unix").find("protected name"), std::string::npos);
  EXPECT_NE(kept_reason(result, "systemd-private-abc-chronyd.service-x").find("protected name"),
            std::string::npos);
  EXPECT_EQ(kept_reason(result, "alice-old"), "<not kept>");  // not ours: not even listed
  EXPECT_TRUE(result.blind_reason.empty()) << result.blind_reason;
}

TEST_F(CleanPlanTest, AllUsersTakesOtherOwnersAndOlderThanMovesTheThreshold) {
  CleanOptions options = tmp_options();
  options.all_users = true;
  options.older_than = std::chrono::seconds(30min);
  EXPECT_EQ(planned(plan(options)),
            (std::vector<std::string>{"alice-old", "old-file", "pymp-old", "young-file"}));
  options.older_than = std::chrono::seconds(4 * 24h);
  EXPECT_TRUE(planned(plan(options)).empty());
}

TEST_F(CleanPlanTest, OtherUsersSeeOnlyTheirOwnAndCannotAskForAll) {
  syscalls_.uid_ = 1000;
  EXPECT_EQ(planned(plan(tmp_options())), (std::vector<std::string>{"alice-old"}));
  CleanOptions options = tmp_options();
  options.all_users = true;
  const Context context = root_.context(syscalls_);
  const auto valid = validate(options, context);
  ASSERT_FALSE(valid);
  EXPECT_EQ(valid.error().message, "--all-users needs root");
}

TEST(ProtectedTmpName, CoversSystemSocketDirsAndPrivateTmp) {
  for (const char* name : {".X11-unix", ".ICE-unix", ".font-unix", ".XIM-unix", ".Test-unix",
                           "snap-private-tmp", "systemd-private-0123-foo.service-AbC"}) {
    EXPECT_TRUE(protected_tmp_name(name)) << name;
  }
  for (const char* name : {"pymp-abc", "torch-shm-dir-1", ".X11-unixx", "systemd-privat"}) {
    EXPECT_FALSE(protected_tmp_name(name)) << name;
  }
}

}  // namespace
}  // namespace headroom
