// Use% as df prints it, shared by `check` (FsStats) and `watch` (FilesystemSample):
// the two once disagreed on a filesystem with root-reserved blocks (19% vs 69%).
#include <gtest/gtest.h>

#include "core/sample/sample.h"
#include "core/syscalls.h"

namespace headroom {
namespace {

TEST(DfUsedPercent, CountsReservedBlocksNeitherAsUsedNorAsAvailable) {
  struct Case {
    std::uint64_t total, free, avail;
    double percent;
  };
  const Case cases[] = {
      {100, 40, 40, 60.0},            // tmpfs: nothing reserved
      {1000, 500, 450, 500.0 / 9.5},  // ext4's reserve: 52.6%, not 1 - 450/1000 = 55%
      // This machine's root fs as df -k printed it: 19037392 used, 81299796 avail, 19%.
      {264212084, 264212084 - 19037392, 81299796, 100.0 * 19037392 / (19037392 + 81299796)},
      {1000, 50, 0, 100.0},  // full for a writer although root has 50 left
      {0, 0, 0, 0.0},        // a zero-size fs (some pseudo-filesystems)
  };
  for (const Case& c : cases) {
    EXPECT_DOUBLE_EQ(df_used_percent(c.total, c.free, c.avail), c.percent)
        << c.total << " " << c.free << " " << c.avail;
    FsStats stats;
    stats.total_bytes = c.total;
    stats.free_bytes = c.free;
    stats.avail_bytes = c.avail;
    FilesystemSample sample;
    sample.total_bytes = c.total;
    sample.free_bytes = c.free;
    sample.avail_bytes = c.avail;
    EXPECT_DOUBLE_EQ(stats.used_percent(), sample.used_percent());
  }
  EXPECT_EQ(static_cast<int>(df_used_percent(264212084, 264212084 - 19037392, 81299796) + 0.5), 19);
}

}  // namespace
}  // namespace headroom
