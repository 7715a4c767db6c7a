#include "core/kernel/proc_maps.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace headroom {
namespace {

TEST(ParseMapsLine, ReadsAFileMapping) {
  const auto line = parse_maps_line(
      "7f3a1c000000-7f3a1c400000 rw-s 00001000 00:1a 123456                     "
      "/dev/shm/nccl-AbC123");
  ASSERT_TRUE(line);
  EXPECT_EQ(line->start, 0x7f3a1c000000u);
  EXPECT_EQ(line->end, 0x7f3a1c400000u);
  EXPECT_EQ(line->offset, 0x1000u);
  EXPECT_EQ(line->major, 0u);
  EXPECT_EQ(line->minor, 0x1au);
  EXPECT_EQ(line->inode, 123456u);
  EXPECT_TRUE(line->shared);
  EXPECT_EQ(line->path, "/dev/shm/nccl-AbC123");
}

TEST(ParseMapsLine, DeviceColumnIsHex) {
  const auto line = parse_maps_line("00400000-00452000 r-xp 00000000 fd:01 9 /usr/bin/x");
  ASSERT_TRUE(line);
  EXPECT_EQ(line->major, 253u);
  EXPECT_EQ(line->minor, 1u);
  EXPECT_EQ(make_device(line->major, line->minor), static_cast<std::uint64_t>(makedev(253, 1)));
  EXPECT_FALSE(line->shared);
}

TEST(ParseMapsLine, KeepsDeletedSuffixAndSpacesInPath) {
  const auto line =
      parse_maps_line("7f00-7f10 rw-s 00000000 00:05 42 /dev/shm/torch 1 2 (deleted)");
  ASSERT_TRUE(line);
  EXPECT_EQ(line->path, "/dev/shm/torch 1 2 (deleted)");
}

TEST(ParseMapsLine, SysvSegmentHasShmidAsInode) {
  const auto line = parse_maps_line("7f00-7f10 rw-s 00000000 00:01 32769 /SYSV0000162e (deleted)");
  ASSERT_TRUE(line);
  EXPECT_EQ(line->inode, 32769u);
  EXPECT_EQ(line->path, "/SYSV0000162e (deleted)");
}

TEST(ParseMapsLine, AnonymousAndPseudoMappings) {
  const auto anonymous = parse_maps_line("7ffd0000-7ffd1000 rw-p 00000000 00:00 0");
  ASSERT_TRUE(anonymous);
  EXPECT_EQ(anonymous->inode, 0u);
  EXPECT_EQ(anonymous->path, "");
  const auto stack = parse_maps_line("7ffd0000-7ffd1000 rw-p 00000000 00:00 0      [stack]");
  ASSERT_TRUE(stack);
  EXPECT_EQ(stack->path, "[stack]");
}

TEST(ParseMapsLine, RejectsMalformedLines) {
  for (const char* bad : {"", "garbage", "7f00 rw-s 0 00:01 1 /x", "7f00-7f10 rw-s 0 0001 1 /x",
                          "7f00-7f10 rw-s zz 00:01 1 /x", "7f10-7f00 rw-s 0 00:01 1 /x",
                          "7f00-7f10 rw 0 00:01 1 /x", "7f00-7f10 rw-s 0 00:01 x /x"}) {
    EXPECT_FALSE(parse_maps_line(bad)) << bad;
  }
}

// PROCMAP_QUERY walks the same file-backed mappings as the text of this very process,
// with the same columns, and names them as the text does.
TEST(QueryFileMapping, WalksWhatTheTextShows) {
  const int maps = ::open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(maps, 0);
  MapsLine mapping;
  if (query_file_mapping(maps, 0, mapping) == ENOTTY) {
    ::close(maps);
    GTEST_SKIP() << "no PROCMAP_QUERY before Linux 6.11";
  }
  std::vector<MapsLine> queried;
  std::vector<std::string> names;
  for (std::uint64_t address = 0; query_file_mapping(maps, address, mapping) == 0;
       address = mapping.end) {
    queried.push_back(mapping);
    std::string name;
    EXPECT_EQ(query_mapping_name(maps, mapping.start, name), 0);
    names.push_back(name);
  }
  ::close(maps);
  // The text, read after: the test's own mappings do not change in between.
  std::ifstream text("/proc/self/maps");
  std::stringstream all;
  all << text.rdbuf();
  const std::string content = all.str();
  std::vector<std::string> lines;
  std::istringstream stream(content);
  for (std::string line; std::getline(stream, line);) {
    const auto parsed = parse_maps_line(line);
    if (parsed && parsed->inode != 0) lines.push_back(line);
  }
  ASSERT_FALSE(queried.empty());
  ASSERT_EQ(queried.size(), lines.size());
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto parsed = parse_maps_line(lines[i]);
    EXPECT_EQ(queried[i].start, parsed->start) << lines[i];
    EXPECT_EQ(queried[i].end, parsed->end) << lines[i];
    EXPECT_EQ(queried[i].offset, parsed->offset) << lines[i];
    EXPECT_EQ(queried[i].major, parsed->major) << lines[i];
    EXPECT_EQ(queried[i].minor, parsed->minor) << lines[i];
    EXPECT_EQ(queried[i].inode, parsed->inode) << lines[i];
    EXPECT_EQ(queried[i].shared, parsed->shared) << lines[i];
    EXPECT_EQ(names[i], parsed->path) << lines[i];
  }
}

}  // namespace
}  // namespace headroom
