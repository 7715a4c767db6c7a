#include "core/kernel/mountinfo.h"

#include <gtest/gtest.h>
#include <sys/sysmacros.h>

namespace headroom {
namespace {

// Lines recorded from this machine and from a Docker container with the default --shm-size.
constexpr std::string_view kMountinfo =
    "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard\n"
    "24 27 0:6 / /dev rw,relatime - devtmpfs devtmpfs rw,size=12334492k,mode=755\n"
    "25 24 0:23 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=24684092k\n"
    "30 25 0:27 / /dev/shm rw,nosuid,nodev,noexec,relatime shared:5 - tmpfs shm rw,size=65536k\n"
    "41 27 0:40 / /mnt/with\\040space ro,relatime master:1 - tmpfs tmpfs ro,size=1024k\n";

TEST(ParseMountinfo, ReadsFieldsAndOptionalTags) {
  auto mounts = parse_mountinfo(kMountinfo);
  ASSERT_TRUE(mounts) << mounts.error().message;
  ASSERT_EQ(mounts->size(), 5u);
  const MountEntry& shm = (*mounts)[3];
  EXPECT_EQ(shm.mount_id, 30);
  EXPECT_EQ(shm.parent_id, 25);
  EXPECT_EQ(shm.mount_point, "/dev/shm");
  EXPECT_EQ(shm.fstype, "tmpfs");
  EXPECT_EQ(shm.source, "shm");
  EXPECT_EQ(shm.option("size"), "65536k");
  EXPECT_FALSE(shm.option("mode"));
  EXPECT_FALSE(shm.read_only());
}

TEST(ParseMountinfo, UnescapesOctalAndSeesReadOnly) {
  auto mounts = parse_mountinfo(kMountinfo);
  ASSERT_TRUE(mounts);
  EXPECT_EQ((*mounts)[4].mount_point, "/mnt/with space");
  EXPECT_TRUE((*mounts)[4].read_only());
}

TEST(ParseMountinfo, RejectsTruncatedLinesWithTheLineNumber) {
  auto mounts = parse_mountinfo("27 1 254:0 / / rw - ext4 /dev/vda rw\n27 1 254:0 /\n");
  ASSERT_FALSE(mounts);
  EXPECT_EQ(mounts.error().code, Error::Code::kParse);
  EXPECT_NE(mounts.error().message.find(":2:"), std::string::npos);
}

TEST(FindMount, PicksTheLastMountOnTheLongestPrefix) {
  auto mounts = parse_mountinfo(kMountinfo);
  ASSERT_TRUE(mounts);
  EXPECT_EQ(find_mount(*mounts, "/dev/shm")->mount_id, 30);  // the later one hides the first
  EXPECT_EQ(find_mount(*mounts, "/dev/shm/torch_1_2")->mount_id, 30);
  EXPECT_EQ(find_mount(*mounts, "/dev/shmx")->mount_id, 24);
  EXPECT_EQ(find_mount(*mounts, "/home/user")->mount_id, 27);
}

// By the name as lexically_normal() gives it: "." and "..", doubled and trailing separators.
TEST(FindMount, ReadsThePathAsItsNormalForm) {
  auto mounts = parse_mountinfo(kMountinfo);
  ASSERT_TRUE(mounts);
  EXPECT_EQ(find_mount(*mounts, "/dev/shm/")->mount_id, 30);
  EXPECT_EQ(find_mount(*mounts, "/dev/shm/.")->mount_id, 30);
  EXPECT_EQ(find_mount(*mounts, "/dev//shm/x")->mount_id, 30);
  EXPECT_EQ(find_mount(*mounts, "/dev/./shm")->mount_id, 30);
  EXPECT_EQ(find_mount(*mounts, "/dev/shm/..")->mount_id, 24);
  EXPECT_EQ(find_mount(*mounts, "/dev/shm/../shmx")->mount_id, 24);
  EXPECT_EQ(find_mount(*mounts, "/home/user/../../dev/shm/a")->mount_id, 30);
  EXPECT_EQ(find_mount(*mounts, "/dev/shm..")->mount_id, 24);  // a name, not ".."
}

// Which paths the watch may statfs on its sampling thread: only those whose lookup cannot
// reach a server or a user-space daemon (sample/filesystems.cc).
TEST(LookupStaysLocal, EveryMountOnTheWayIsOfALocalType) {
  const std::string table = std::string(kMountinfo) +
                            "50 27 0:50 / /mnt/nfs rw - nfs4 srv:/export rw,vers=4.2\n"
                            "51 27 0:51 / /home/u/remote rw - fuse.sshfs u@h:/ rw\n"
                            "52 27 0:52 / /var/lib/docker/x/merged rw - overlay overlay rw\n"
                            "53 27 0:53 / /net rw - autofs /etc/auto.net rw\n"
                            "54 27 0:54 / /scratch rw - nfs srv:/scratch rw\n"
                            "55 54 0:55 / /scratch rw - ext4 /dev/vdb rw\n"
                            "56 27 0:56 / /data rw - xfs /dev/vdc rw\n";
  auto mounts = parse_mountinfo(table);
  ASSERT_TRUE(mounts);
  for (const char* local : {"/", "/dev/shm", "/dev/shm/", "/data/ckpt", "/mnt/nfs2/x", "/tmp/./x",
                            "/mnt/with space/a", "/home/u/remote2"}) {
    EXPECT_TRUE(lookup_stays_local(*mounts, local)) << local;
  }
  for (const char* remote :
       {"/mnt/nfs", "/mnt/nfs/run1", "/home/u/remote/ckpt", "/var/lib/docker/x/merged/tmp",
        "/net/host/data",
        // An ext4 mounted over an NFS mount: a lookup of /scratch still starts on the NFS one.
        "/scratch/run",
        // ".." may climb out of a local path into anything; a relative path has no mounts.
        "/data/../mnt/nfs", "/data/..", "data/ckpt"}) {
    EXPECT_FALSE(lookup_stays_local(*mounts, remote)) << remote;
  }
  EXPECT_FALSE(lookup_stays_local({}, "/data"));  // no table: nothing is known
}

// The devices a file at or below a path can be on (inuse_scan.cc tests a link's device
// before reading it): every mount on the way to it, hidden or not, and every mount below
// it, and none when one of them gives its files devices of their own.
TEST(DevicesBelow, EveryMountOnTheWayAndBelowThePathWhenEachHasOneDevice) {
  const std::string table = std::string(kMountinfo) +
                            "56 27 0:56 / /data rw - xfs /dev/vdc rw\n"
                            "57 56 0:57 / /data/run/shm rw - tmpfs tmpfs rw\n"
                            "58 56 0:58 / /data2 rw - ext4 /dev/vdd rw\n"
                            "59 27 0:59 / /vol rw - btrfs /dev/vde rw\n"
                            "60 27 0:60 / /mixed rw - ext4 /dev/vdf rw\n"
                            "61 60 0:61 / /mixed/layers rw - overlay overlay rw\n"
                            "62 27 0:62 / /mixed/proc rw - proc proc rw\n";
  auto mounts = parse_mountinfo(table);
  ASSERT_TRUE(mounts);
  using Devices = std::vector<std::uint64_t>;
  const auto dev = [](unsigned major_number, unsigned minor_number) {
    return static_cast<std::uint64_t>(makedev(major_number, minor_number));
  };
  const Devices data{dev(254, 0), dev(0, 56), dev(0, 57)};
  EXPECT_EQ(devices_below(*mounts, "/data"), data);
  EXPECT_EQ(devices_below(*mounts, "/data/"), data);
  EXPECT_EQ(devices_below(*mounts, "/data/run/shm/x"), data);
  EXPECT_EQ(devices_below(*mounts, "/data/run"), data);
  // Both tmpfs mounts on /dev/shm: a file opened before the second hid the first
  // still reads as /dev/shm/..., and so does one opened on /dev or / before them.
  EXPECT_EQ(devices_below(*mounts, "/dev/shm"),
            (Devices{dev(254, 0), dev(0, 6), dev(0, 23), dev(0, 27)}));
  EXPECT_EQ(devices_below(*mounts, "/home/u"), (Devices{dev(254, 0)}));
  // A btrfs subvolume's files, an overlay's and proc's have devices of their own.
  EXPECT_FALSE(devices_below(*mounts, "/vol/sub"));
  EXPECT_FALSE(devices_below(*mounts, "/mixed"));
  EXPECT_FALSE(devices_below(*mounts, "/"));
  EXPECT_EQ(devices_below(*mounts, "/mixed/data"), (Devices{dev(254, 0), dev(0, 60)}));
  EXPECT_FALSE(devices_below(*mounts, "data"));  // relative: no mount holds it
  EXPECT_FALSE(devices_below({}, "/data"));      // no table: nothing is known
}

// A job wrote to /scratch before the local disk was mounted there: its file is on the
// root filesystem, hidden under /scratch, and still reads as /scratch/... (who listed it
// by that name before the gate). The mount on the way, not only the one holding the
// path, is where such a file is; when that one is an overlay (a container's root), its
// devices are not known.
TEST(DevicesBelow, AMountOnTheWayHoldsWhatALaterMountHid) {
  auto host = parse_mountinfo(
      "27 1 254:0 / / rw - ext4 /dev/vda rw\n"
      "70 27 259:1 / /scratch rw - xfs /dev/nvme0n1p1 rw\n");
  ASSERT_TRUE(host);
  using Devices = std::vector<std::uint64_t>;
  const Devices both{makedev(254, 0), makedev(259, 1)};
  EXPECT_EQ(devices_below(*host, "/scratch"), both);
  EXPECT_EQ(devices_below(*host, "/scratch/run7"), both);
  auto container = parse_mountinfo(
      "500 400 0:90 / / rw - overlay overlay rw,lowerdir=/l,upperdir=/u,workdir=/w\n"
      "501 500 0:91 / /dev rw,nosuid - tmpfs tmpfs rw,mode=755\n"
      "502 501 0:92 / /dev/shm rw - tmpfs shm rw,size=65536k\n");
  ASSERT_TRUE(container);
  EXPECT_FALSE(devices_below(*container, "/dev/shm"));
}

}  // namespace
}  // namespace headroom
