// plan_clean's rules for the temp dir on a scratch root whose /proc shows only kthreadd
// (nobody holds anything, and it is the initial pid namespace): protected names, the owner
// filter at every depth, the age threshold (mtime, atime and ctime), the refusal of
// --all-users for non-root, and which temp dirs are refused.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>

#include "core/clean/clean.h"
#include "core/clean/clean_rules.h"
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
    fs::create_directories(root_.path() / "proc/2");
    std::ofstream(root_.path() / "proc/2/stat")
        << "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 6 0 0 "
           "18446744073709551615 0 0 0 0 0 0 0 2147483647 0 0 0 0 0 0 0 0 0 0 0\n";
    fs::create_directories(root_.path() / "tmp");
    fs::permissions(root_.path() / "tmp", fs::perms::all | fs::perms::sticky_bit);
    // The files' ctimes are now, which cannot be set back: the clock moves forward instead.
    syscalls_.now_ = std::chrono::system_clock::now() + 30 * 24h;
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
  EXPECT_NE(kept_reason(result, "young-file").find("used 1h 0m ago, younger than 1d"),
            std::string::npos)
      << kept_reason(result, "young-file");
  EXPECT_NE(kept_reason(result, ".X11-unix").find("protected name"), std::string::npos);
  EXPECT_NE(kept_reason(result, "systemd-private-abc-chronyd.service-x").find("protected name"),
            std::string::npos);
  EXPECT_EQ(kept_reason(result, "alice-old"), "<not kept>");  // not ours: not even listed
  EXPECT_TRUE(result.blocking_pids.empty());
  EXPECT_EQ(result.visibility_note, "");
}

TEST_F(CleanPlanTest, AnotherUsersFileInsideOurDirectoryKeepsItWhole) {
  make("shared/alice-results.csv", 3 * 24h, 1000);
  make("shared/mine", 3 * 24h, 0);
  make("shared", 3 * 24h, 0, true);
  const CleanPlan result = plan(tmp_options());
  EXPECT_EQ(planned(result), (std::vector<std::string>{"old-file", "pymp-old"}));
  EXPECT_EQ(kept_reason(result, "shared"),
            "alice-results.csv: owned by 1000 (use --all-users as root)");
}

TEST_F(CleanPlanTest, ACtimeOrAtimeNewerThanTheMtimeIsRecentUse) {
  // Extracted just now with 2021 mtimes: the ctime is the real clock's now.
  syscalls_.now_ = std::chrono::system_clock::now() + 1h;
  make("extracted/sample.jpg", 5 * 365 * 24h, 0);
  make("extracted", 5 * 365 * 24h, 0, true);
  const CleanPlan result = plan(tmp_options());
  EXPECT_EQ(planned(result), std::vector<std::string>{});
  EXPECT_EQ(kept_reason(result, "extracted").rfind("used 59m", 0), 0U)
      << kept_reason(result, "extracted");
}

TEST_F(CleanPlanTest, AProcWithoutKthreaddIsAPidNamespaceWhereDirectoriesStay) {
  fs::remove_all(root_.path() / "proc/2");
  const CleanPlan result = plan(tmp_options());
  EXPECT_EQ(planned(result), (std::vector<std::string>{"old-file"}));  // the lease proves it
  EXPECT_NE(kept_reason(result, "pymp-old").find("outside this pid namespace"), std::string::npos)
      << kept_reason(result, "pymp-old");
}

TEST_F(CleanPlanTest, TheTempDirMustBeSharedUnlessNamedAndNeverASystemDirectory) {
  fs::permissions(root_.path() / "tmp", fs::perms::owner_all);
  CleanOptions options = tmp_options();
  const Context context = root_.context(syscalls_);
  auto refused = plan_clean(context, options);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("name it with --tmp-dir /tmp"), std::string::npos)
      << refused.error().message;
  options.tmp_dir_explicit = true;
  EXPECT_EQ(planned(plan(options)), (std::vector<std::string>{"old-file", "pymp-old"}));
  for (const char* system : {"/etc", "/usr/share", "/var/lib/docker", "/"}) {
    options.tmp_dir = system;
    fs::create_directories(root_.path() / fs::path(system).relative_path());
    auto result = plan_clean(context, options);
    ASSERT_FALSE(result) << system;
    EXPECT_NE(result.error().message.find("system directory"), std::string::npos)
        << result.error().message;
  }
}

TEST(QuarantineName, IsRandomAndUnguessable) {
  const std::string first = quarantine_name();
  const std::string second = quarantine_name();
  EXPECT_NE(first, second);
  ASSERT_EQ(first.size(), std::string(".headroom-clean-").size() + 16) << first;
  EXPECT_EQ(first.rfind(".headroom-clean-", 0), 0U);
  EXPECT_EQ(first.find_first_not_of("0123456789abcdef", 16), std::string::npos) << first;
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

TEST_F(CleanPlanTest, UserTakesThatOwnersFilesAtEveryDepthInsteadOfTheCallers) {
  make("alice-dir/results.csv", 3 * 24h, 1000);
  make("alice-dir", 3 * 24h, 1000, true);
  make("alice-mixed/root-file", 3 * 24h, 0);
  make("alice-mixed", 3 * 24h, 1000, true);
  CleanOptions options = tmp_options();
  options.user = 1000;
  const CleanPlan result = plan(options);
  EXPECT_EQ(planned(result), (std::vector<std::string>{"alice-dir", "alice-old"}));
  // --user's words, not --all-users' (which --user excludes).
  EXPECT_EQ(kept_reason(result, "alice-mixed"), "root-file: owned by 0, not 1000 (--user)");
  EXPECT_EQ(kept_reason(result, "old-file"), "<not kept>");  // root's own: not even listed
}

TEST_F(CleanPlanTest, UserNeedsRootForAnotherUserAndExcludesAllUsers) {
  CleanOptions options = tmp_options();
  options.user = 1000;
  options.all_users = true;
  const Context context = root_.context(syscalls_);
  auto valid = validate(options, context);
  ASSERT_FALSE(valid);
  EXPECT_EQ(valid.error().message, "--user and --all-users exclude each other");
  options.all_users = false;
  syscalls_.uid_ = 1001;
  valid = validate(options, context);
  ASSERT_FALSE(valid);
  EXPECT_EQ(valid.error().message, "--user needs root");
  syscalls_.uid_ = 1000;  // naming yourself is allowed, and the same as not naming anyone
  EXPECT_TRUE(validate(options, context));
  EXPECT_EQ(planned(plan(options)), (std::vector<std::string>{"alice-old"}));
}

}  // namespace
}  // namespace headroom
