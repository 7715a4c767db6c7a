// shm_remedies (issue 16): the one /dev/shm fix, bounded by what was measured.
#include <gtest/gtest.h>

#include "core/checks/remedy.h"

namespace headroom {
namespace {

constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;

Runtime runtime(RuntimeKind kind) {
  Runtime out;
  out.kind = kind;
  return out;
}

TEST(ShmRemedies, ATmpfsIsResizedAndMadePermanent) {
  const auto lines =
      shm_remedies(runtime(RuntimeKind::kHost), 634 * kMiB, {64 * kMiB, 24 * kGiB, {}, true},
                   {"lower the need: fewer DataLoader workers"});
  ASSERT_EQ(lines.size(), 3U);
  EXPECT_EQ(lines[0], "sudo mount -o remount,size=634m /dev/shm");
  EXPECT_EQ(lines[1],
            "make it permanent in /etc/fstab: tmpfs /dev/shm tmpfs defaults,size=634m 0 0");
  EXPECT_EQ(lines[2], "or lower the need: fewer DataLoader workers");
}

TEST(ShmRemedies, ADevShmThatIsNoTmpfsGetsOneMountedNotResized) {
  // /dev/shm on the root disk (a chroot, a minimal image): larger than the ask, yet the fix
  // is a tmpfs, not "free what fills it".
  const auto lines =
      shm_remedies(runtime(RuntimeKind::kHost), kGiB, {200 * kGiB, 24 * kGiB, {}, false});
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.front(),
            "sudo mkdir -p /dev/shm && sudo mount -t tmpfs -o size=1024m,mode=1777 tmpfs /dev/shm");
}

TEST(ShmRemedies, AContainerWhoseMemoryLimitCannotHoldItIsToldToRaiseItToo) {
  const auto lines =
      shm_remedies(runtime(RuntimeKind::kDocker), 2 * kGiB, {64 * kMiB, 24 * kGiB, 1 * kGiB, true});
  ASSERT_GE(lines.size(), 4U);
  EXPECT_EQ(lines[0], "restart the container with: docker run --shm-size=2048m ...");
  EXPECT_EQ(lines[3],
            "/dev/shm's pages count against the container's memory limit (1.0 GiB): raise "
            "--memory by 2.0 GiB too");
}

TEST(ShmRemedies, WithoutMeasurementsTheRemountIsConditional) {
  const auto lines = shm_remedies(runtime(RuntimeKind::kHost), 2 * kGiB, {});
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.front(),
            "sudo mount -o remount,size=2048m /dev/shm (only if df -h /dev/shm shows less than 2.0 "
            "GiB)");
}

}  // namespace
}  // namespace headroom
